"""Recovery and the lease: lost messages, crashed workers, stale writes, overlapping sweeps."""

import json
import threading
import uuid
from typing import Any

import pytest

from lambdas import config
from lambdas.handlers import worker
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType
from lambdas.lifecycle.sweeps.recovery import Sweeper
from lambdas.models.job import JobStatus, NewJob
from lambdas.store.errors import StaleAttemptError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from local_runtime.context import LambdaContext
from tests.support.calls import record_params
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline, fail_sends
from tests.support.stores import Clock, store_from_env

pytestmark = pytest.mark.usefixtures("test_types")


def store(pipeline: Pipeline) -> JobStore:
    return store_from_env(pipeline.env)


def queued_ids(pipeline: Pipeline) -> list[str]:
    return [json.loads(r["body"])["jobId"] for r in pipeline.receive(pipeline.queue_url)]


def test_a_lost_send_message_is_repaired_by_recovery(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    fail_sends()
    job_id = pipeline.submit("test_echo", {"value": "durable"})
    from lambdas.store import clients

    clients.reset()  # the outage is over
    assert pipeline.run_recovery()["requeuedPending"] == 0  # not overdue yet

    monkeypatch.setenv(config.ENV_RECOVERY_GRACE_SECONDS, "0")
    from lambdas.handlers import recovery
    from lambdas.models import settings

    settings.reset()
    recovery._sweeper.cache_clear()
    clock.advance(1)
    assert pipeline.run_recovery()["requeuedPending"] == 1
    pipeline.run_worker()

    assert pipeline.job(job_id)["status"] == "done"


def test_a_job_waiting_out_its_backoff_is_not_re_enqueued(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setenv(config.ENV_RECOVERY_GRACE_SECONDS, "0")
    monkeypatch.setattr("random.random", lambda: 1.0)  # backoff = base = 10 s
    job_id = pipeline.submit("test_flaky", {"failTimes": 1})
    pipeline.run_worker()
    assert pipeline.job(job_id)["status"] == "pending"

    clock.advance(config.BACKOFF_BASE_SECONDS - 1)  # past the grace, not past the backoff
    report = pipeline.run_recovery()

    assert report["requeuedPending"] == 0
    assert pipeline.receive(pipeline.queue_url) == []  # only the original message, still hidden


def test_a_worker_that_died_mid_job_is_recovered(pipeline: Pipeline, clock: Clock) -> None:
    job_id = pipeline.submit("test_echo", {"value": "again"})
    pipeline.receive(pipeline.queue_url)  # the doomed worker's receive: the message is now hidden
    store(pipeline).claim(job_id, lease_seconds=60)  # ...and its claim; then it dies
    assert pipeline.job(job_id)["status"] == "processing"

    clock.advance(61)
    report = pipeline.run_recovery()

    assert report["requeuedExpired"] == 1
    job = pipeline.job(job_id)
    assert job["status"] == "pending"
    assert job["lastError"] == "lease expired on attempt 1: the worker crashed or timed out"
    pipeline.run_worker()
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("done", 2)


def test_overlapping_sweeps_send_each_job_once(pipeline: Pipeline, clock: Clock) -> None:
    from lambdas.lifecycle.sweeps.recovery import Sweeper
    from lambdas.store.queue import JobQueue

    fail_sends()
    ids = [pipeline.submit("test_echo", {}) for _ in range(12)]
    from lambdas.store import clients

    clients.reset()
    clock.advance(1)
    queue = JobQueue(pipeline.queue_url)
    second = Sweeper(store(pipeline), queue, grace_seconds=0)
    reports = []

    def budget() -> bool:
        # The first sweep has read its first page when the second sweep runs from start to end.
        if not reports:
            reports.append(second.sweep(lambda: True))
        return True

    first = Sweeper(store(pipeline), queue, grace_seconds=0).sweep(budget)

    assert reports[0].requeued_pending == 12
    assert first.requeued_pending == 0  # every job it had read was re-sent by the other sweep
    sent: list[str] = []
    while batch := queued_ids(pipeline):
        sent += batch
    assert sorted(sent) == sorted(ids)


def test_recovery_pages_through_everything_overdue(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setenv(config.ENV_RECOVERY_GRACE_SECONDS, "0")
    fail_sends()
    count = 230  # more than any page or fixed limit
    for _ in range(count):
        pipeline.submit("test_echo", {})
    from lambdas.store import clients

    clients.reset()
    clock.advance(1)

    assert pipeline.run_recovery()["requeuedPending"] == count


def test_a_sweep_out_of_time_stops_and_the_next_one_goes_on(pipeline: Pipeline, clock: Clock) -> None:
    from lambdas.lifecycle.sweeps.recovery import Sweeper
    from lambdas.store.queue import JobQueue

    fail_sends()
    for _ in range(3):
        pipeline.submit("test_echo", {})
    from lambdas.store import clients

    clients.reset()
    clock.advance(1)
    sweeper = Sweeper(store(pipeline), JobQueue(pipeline.queue_url), grace_seconds=0)
    budget = iter([True, False])

    first = sweeper.sweep(lambda: next(budget, False))
    second = sweeper.sweep(lambda: True)

    assert (first.requeued_pending, first.out_of_time) == (1, True)
    assert (second.requeued_pending, second.out_of_time) == (2, False)


def test_a_stale_workers_late_write_is_refused(pipeline: Pipeline, clock: Clock) -> None:
    jobs = store(pipeline)
    job_id = pipeline.submit("test_echo", {})
    first = jobs.claim(job_id, lease_seconds=60)
    clock.advance(61)
    second = jobs.claim(job_id, lease_seconds=60)  # the lease ran out: a new attempt takes over
    assert second.attempts == 2

    with pytest.raises(StaleAttemptError):
        jobs.complete(first, {"from": "attempt 1"})
    with pytest.raises(StaleAttemptError):
        jobs.retry(first, "late failure", 5)
    with pytest.raises(StaleAttemptError):
        jobs.fail(first, "late death")

    jobs.complete(second, {"from": "attempt 2"})
    final = jobs.get(job_id)
    assert final is not None
    assert (final.status, final.result) == (JobStatus.DONE, {"from": "attempt 2"})


def test_a_worker_past_its_lease_loses_to_the_next_attempt(
    pipeline: Pipeline, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Broken line: `_ATTEMPT_CONDITION`'s `attempts = :attempt` as `attempts >= :attempt`
    (store/jobs.py): the late first attempt's result then overwrites the running second attempt's job."""
    started = {1: threading.Event(), 2: threading.Event()}
    release = {1: threading.Event(), 2: threading.Event()}

    def stall(payload: EchoPayload, context: JobContext) -> dict[str, int]:
        started[context.attempt].set()
        release[context.attempt].wait(30)
        return {"attempt": context.attempt}

    registry.register(JobType("test_stall", EchoPayload, stall))
    job_id = pipeline.submit("test_stall", {})
    responses: dict[int, dict[str, Any]] = {}

    def invoke(attempt: int) -> threading.Thread:
        records = pipeline.receive(pipeline.queue_url)
        thread = threading.Thread(
            target=lambda: responses.update(
                {attempt: worker.handler({"Records": records}, LambdaContext(function_name="worker"))}
            )
        )
        thread.start()
        assert started[attempt].wait(30)
        return thread

    first = invoke(1)
    clock.advance(int(pipeline.env[config.ENV_LEASE_SECONDS]) + 1)  # its lease runs out mid-run
    pipeline.sqs.send_message(QueueUrl=pipeline.queue_url, MessageBody=json.dumps({"jobId": job_id}))
    second = invoke(2)

    release[1].set()  # the first attempt finishes late, while the second one still runs
    first.join()
    assert responses[1] == {"batchItemFailures": []}  # its message is simply dropped
    assert (pipeline.job(job_id)["status"], pipeline.job(job_id)["result"]) == ("processing", None)
    release[2].set()
    second.join()

    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], job["result"]) == ("done", 2, {"attempt": 2})
    # the take-over is logged from the state it really left: an expired `processing`, not `pending`
    transitions = [
        m for m in caplog.messages if m.startswith(f"job {job_id} ") and m.endswith("-> processing")
    ]
    assert transitions == [f"job {job_id} pending -> processing", f"job {job_id} processing -> processing"]


def test_expired_lease_on_the_last_attempt_goes_dead(pipeline: Pipeline, clock: Clock) -> None:
    job_id = pipeline.submit("test_echo", {}, maxAttempts=1)
    pipeline.receive(pipeline.queue_url)
    store(pipeline).claim(job_id, lease_seconds=60)
    clock.advance(61)
    pipeline.run_recovery()

    pipeline.drain()

    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert job["lastError"].startswith("no attempts left after 1")
    assert len(pipeline.alerts()) == 1


def test_every_finished_sweep_emits_the_heartbeat_its_alarm_watches(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    # infra's RecoverySweepsMissing alarm fires when this count stays at zero for three periods.
    pipeline.run_recovery()

    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (metrics,) = [blob for blob in blobs if config.METRIC_SWEEPS in blob]
    assert metrics[config.METRIC_SWEEPS] == [1.0]
    assert metrics["service"] == config.SERVICE_NAME
    (directive,) = metrics["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == config.METRICS_NAMESPACE


# Recovery and delayed jobs: what the sweep must leave alone, and what it must not miss.
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.
# Time is the `clock` fixture's: moved by hand, never slept.


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
    `send_if_pending`'s `message_delay(job, now)` as 0."""
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
