"""Going dead: a late attempt's failure (permanent or not) does not touch the job a newer attempt runs,
and a job the dead-letter path ends leaves the sweeper's index. Found by `make mutate` (mutants of
`Worker._dead`, `Worker._retry` and `JobStore.mark_dead` no test failed on); each test was first run
against the one-line break its docstring names, seen to fail, then restored.
"""

import boto3
import pytest

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, PermanentJobError, RetryableJobError
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import JobStatus
from lambdas.models.timestamps import iso_time
from lambdas.store import codec, schema
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (PermanentJobError("input refused, but too late"), DeliveryOutcome.FAILED),
        (RetryableJobError("endpoint answered 503, too late"), DeliveryOutcome.RETRY),
    ],
    ids=["permanent", "retryable"],
)
def test_a_failure_after_the_lease_was_lost_leaves_the_newer_attempt_alone_and_logs_its_delivery(
    pipeline: Pipeline, store: JobStore, clock: Clock, error: Exception, outcome: DeliveryOutcome
) -> None:
    """The late attempt's outcome is refused (a newer attempt owns the job); the delivery it recorded
    happened all the same, and its log line is written on its own.

    Broken lines, each alone: `_dead`'s `self._stale(message, job, recorded)` as `self._stale(job)`, or
    with `None` for `recorded`; `_retry`'s with `None` for `recorded`."""
    lease = int(pipeline.env[config.ENV_LEASE_SECONDS])

    def too_late(payload: EchoPayload, context: JobContext) -> None:
        attempted_at = iso_time(clock())
        context.record_delivery(
            DeliveryAttempt(
                "fan", context.job_id, "ep-1", "invoice.paid", context.attempt, attempted_at, outcome, 1
            )
        )
        clock.advance(lease + 1)  # the lease runs out mid-run and the next attempt takes the job
        store.claim(context.job_id, lease)
        raise error

    registry.register(JobType("test_too_late", EchoPayload, too_late))
    job_id = pipeline.submit("test_too_late", {})

    assert pipeline.run_worker() == {"batchItemFailures": []}  # the late attempt's message is dropped

    job = store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 2)
    assert pipeline.visible(pipeline.dlq_url) == 0
    [line] = DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE]).for_fanout("fan")
    assert (line.delivery_id, line.attempt, line.outcome) == (job_id, 1, outcome)


def test_a_job_the_dead_letter_path_ends_leaves_the_sweepers_index(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `mark_dead`'s `remove=state.remove` dropped (the dead job keeps its `dueAt`)."""
    job_id = pipeline.submit("test_echo", {})

    dead = store.mark_dead(job_id, "redriven: the worker never finished it")

    assert dead is not None
    assert dead.status is JobStatus.DEAD
    item = boto3.client("dynamodb").get_item(
        TableName=pipeline.table, Key=codec.key(job_id), ConsistentRead=True
    )
    assert schema.DUE_AT not in item["Item"]
    assert schema.TTL_ATTRIBUTE in item["Item"]
    assert [j.job_id for j in store.by_status(JobStatus.DEAD)] == []
