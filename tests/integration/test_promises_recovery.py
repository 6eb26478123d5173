"""Recovery and delayed jobs: what the sweep must leave alone, and what it must not miss.

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
Time is the `clock` fixture's: moved by hand, never slept.
"""

import json
import uuid
from typing import Any

import pytest

from lambdas import config
from lambdas.lifecycle.recovery import Sweeper
from lambdas.models.job import JobStatus, NewJob
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.support.calls import record_params
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env

pytestmark = pytest.mark.usefixtures("test_types")


def _grace(pipeline: Pipeline) -> int:
    return int(pipeline.env[config.ENV_RECOVERY_GRACE_SECONDS])


def test_recovery_leaves_a_processing_job_with_a_live_lease_alone(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Broken line: `Sweeper.sweep`'s `by_status(JobStatus.PROCESSING, due_before=now)` as `due_before=None`."""
    job_id = pipeline.submit("test_echo", {})
    pipeline.receive(pipeline.queue_url)  # a worker took the message...
    lease = 600
    store.claim(job_id, lease_seconds=lease)  # ...and is still running the job

    clock.advance(max(lease - 1, _grace(pipeline) + 1))
    assert pipeline.run_recovery()["requeuedExpired"] == 0
    assert pipeline.job(job_id)["status"] == "processing"
    assert pipeline.visible(pipeline.queue_url) == 0  # nothing was re-sent

    clock.advance(2)  # the lease has run out: now the worker is presumed gone
    assert pipeline.run_recovery()["requeuedExpired"] == 1
    assert pipeline.visible(pipeline.queue_url) == 1


def test_recovery_reads_every_page_of_one_shard(pipeline: Pipeline, clock: Clock) -> None:
    """Broken line: `by_status`'s `for page in pages:` as `for page in list(pages)[:1]:` (first page only)."""
    one_shard = store_from_env(pipeline.env, shards=1)  # every job under one index key
    count = 130  # more than one 100-item page
    ids = [
        one_shard.put_new(
            NewJob(job_id=str(uuid.uuid4()), job_type="test_echo", payload={}, max_attempts=1)
        ).job_id
        for _ in range(count)
    ]  # stored, never sent: every message was lost
    clock.advance(1)

    report = Sweeper(one_shard, JobQueue(pipeline.queue_url), grace_seconds=0).sweep(lambda: True)

    assert (report.requeued_pending, report.out_of_time) == (count, False)
    sent: list[str] = []
    while records := pipeline.receive(pipeline.queue_url):
        sent += [json.loads(r["body"])["jobId"] for r in records]
        pipeline.sqs.delete_message_batch(
            QueueUrl=pipeline.queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(records)],
        )
    assert sorted(sent) == sorted(ids)


@pytest.fixture
def sends(pipeline: Pipeline) -> list[dict[str, Any]]:
    """The SendMessage calls put on the wire."""
    return record_params("sqs", "SendMessage")


def test_a_delayed_job_keeps_its_delay_in_its_due_time_and_its_message(
    pipeline: Pipeline, store: JobStore, clock: Clock, sends: list[dict[str, Any]]
) -> None:
    """Broken lines, each alone: `JobItems.new_item`'s (store/codec.py) `now + new.delay_seconds` as `now`; `submit`'s
    `queue.send(job.job_id, request.delay_seconds)` without the delay."""
    delay = 120

    job_id = pipeline.submit("test_echo", {}, delaySeconds=delay)

    # the message is hidden for the delay...
    assert [(json.loads(s["MessageBody"])["jobId"], s["DelaySeconds"]) for s in sends] == [(job_id, delay)]
    assert pipeline.receive(pipeline.queue_url) == []
    # ...and the job is due when the message shows up, not before
    job = store.get(job_id)
    assert job is not None
    assert (job.status, job.due_at) == (JobStatus.PENDING, int((clock.now + delay) * 1000))
    clock.advance(_grace(pipeline) + delay - 1)  # overdue only if the delay had been forgotten
    assert pipeline.run_recovery()["requeuedPending"] == 0
    clock.advance(2)
    assert pipeline.run_recovery()["requeuedPending"] == 1
