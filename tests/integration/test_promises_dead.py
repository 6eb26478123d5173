"""Going dead: a late attempt's failure does not kill the job a newer attempt runs, and a job the
dead-letter path ends leaves the sweeper's index. Found by `make mutate` (mutants of `Worker._dead`
and `JobStore.mark_dead` no test failed on); each test was first run against the one-line break its
docstring names, seen to fail, then restored.
"""

import boto3
import pytest

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, PermanentJobError
from lambdas.models.job import JobStatus
from lambdas.store import codec, schema
from lambdas.store.jobs import JobStore
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")


def test_a_permanent_failure_after_the_lease_was_lost_leaves_the_newer_attempt_alone(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Broken line: `_dead`'s `return self._stale(message, job)` as `self._stale(job)`."""
    lease = int(pipeline.env[config.ENV_LEASE_SECONDS])

    def too_late(payload: EchoPayload, context: JobContext) -> None:
        clock.advance(lease + 1)  # the lease runs out mid-run and the next attempt takes the job
        store.claim(context.job_id, lease)
        raise PermanentJobError("input refused, but too late")

    registry.register(JobType("test_too_late", EchoPayload, too_late))
    job_id = pipeline.submit("test_too_late", {})

    assert pipeline.run_worker() == {"batchItemFailures": []}  # the late attempt's message is dropped

    job = store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 2)
    assert pipeline.visible(pipeline.dlq_url) == 0


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
