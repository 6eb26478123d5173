"""Issue 24: a job done after failed attempts does not show an earlier attempt's error as its state."""

from tests.support.pipeline import Pipeline


def test_a_job_done_after_a_failed_attempt_has_no_last_error_and_keeps_it_in_its_history(
    pipeline: Pipeline, test_types: None
) -> None:
    """Seen failing (`lastError: "transient failure 1"` on the done job, in its view and its list entry)
    with `summary_fields` (models/api.py) passing `job.last_error` whatever the status."""
    job_id = pipeline.submit("test_flaky", {"failTimes": 1})
    pipeline.drain()

    job = pipeline.job(job_id)
    listed = pipeline.request("GET", "/jobs?status=done").body["jobs"]

    assert (job["status"], job["lastError"]) == ("done", None)
    assert [(a["outcome"], a["error"]) for a in job["history"]] == [
        ("retry", "transient failure 1"),
        ("done", None),
    ]
    assert [(j["jobId"], j["lastError"]) for j in listed] == [(job_id, None)]
