"""A dead job's alert says everything an operator needs without opening the job.

Found by `make mutate` (a mutant of `DeadLetterConsumer._alert` no test failed on). The test was first
run against the one-line break its docstring names, seen to fail, then restored.
"""

import pytest

from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


def test_a_dead_jobs_alert_carries_its_id_type_attempts_budget_error_and_parent(pipeline: Pipeline) -> None:
    """Broken line: `_alert`'s `"maxAttempts": job.max_attempts` as `"maxattempts": ...`."""
    response = pipeline.request(
        "POST", "/jobs", {"type": "test_always_fail", "payload": {"value": "x"}, "maxAttempts": 1}
    )
    job_id = response.body["jobId"]

    pipeline.drain()

    (alert,) = pipeline.alerts()
    job = pipeline.job(job_id)
    assert alert == {
        "subject": f"offload: job test_always_fail {job_id} is dead",
        "jobId": job_id,
        "jobType": "test_always_fail",
        "attempts": 1,
        "maxAttempts": 1,
        "lastError": job["lastError"],
        "parentId": None,
    }
    assert job["lastError"]
