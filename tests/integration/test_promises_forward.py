"""A dead job's message forwarded to the dead-letter queue again says which job and why.

Found by `make mutate` (mutants of `Worker._not_claimed` no test failed on). The test was first run
against the one-line break its docstring names, seen to fail, then restored.
"""

import pytest

from lambdas.models.job import JobStatus
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


def test_a_dead_unalerted_job_is_forwarded_with_its_id_and_a_reason_even_without_an_error(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken lines: `_not_claimed`'s attributes `"jobId"` as `"jobid"`, and `or "dead"` as `or "XXdeadXX"`."""
    job_id = pipeline.submit("test_echo", {"value": "x"})
    (record,) = pipeline.receive(pipeline.queue_url)
    # given the job died with an empty error and its alert was never raised (no forward happened)
    store.fail(store.claim(job_id, 60), "")

    # when its message is delivered
    assert pipeline.run_worker([record]) == {"batchItemFailures": []}

    # then the dead-letter queue holds it, saying which job and why
    (letter,) = pipeline.receive(pipeline.dlq_url)
    attributes = {name: value["stringValue"] for name, value in letter["messageAttributes"].items()}
    assert attributes == {
        "jobId": job_id,
        "reason": "dead",
        "sourceMessageId": record["messageId"],
        "attempt": "1",
        "attemptTotal": "1",  # the death the letter is about: the consumer fences on it
    }
    assert pipeline.job(job_id)["status"] == JobStatus.DEAD.value
