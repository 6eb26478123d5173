"""Dead letters are fenced: a letter about a job's past life never kills or alerts its next one.

A letter can reach the consumer long after it was written: SQS redelivers a copy, or it waits on the
DLQ (up to its retention) while the consumer or SNS was failing. Meanwhile an operator may have
retried the job. A letter the worker forwarded names the attempt that died (`attemptTotal`, which a
retry does not reset) and only alerts for that death; a redriven message (no attempt of its own) kills
the job only if no retry came after the message was sent (`SentTimestamp` against `reopenedAt`).
Issue 18, item 1.
"""

from typing import Any

import pytest

from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, PermanentJobError
from lambdas.models.job import JobStatus
from lambdas.store import clients
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline, fail_sends

pytestmark = pytest.mark.usefixtures("test_types")

_runs: list[int] = []


def _dies_once(_: EchoPayload, context: JobContext) -> dict[str, Any]:
    _runs.append(context.attempt)
    if len(_runs) == 1:
        raise PermanentJobError("the first run dies")
    return {"runs": len(_runs)}


@pytest.fixture
def dies_once() -> None:
    _runs.clear()
    registry.register(JobType(name="test_dies_once", payload_model=EchoPayload, run=_dies_once))


def copy_of(pipeline: Pipeline, letter: dict[str, Any]) -> None:
    """A second copy of a letter already handled (a redelivery), with the attributes it was sent with."""
    pipeline.sqs.send_message(
        QueueUrl=pipeline.dlq_url,
        MessageBody=letter["body"],
        MessageAttributes={
            name: {"DataType": value["dataType"], "StringValue": value["stringValue"]}
            for name, value in letter["messageAttributes"].items()
        },
    )


def died_and_alerted(pipeline: Pipeline) -> tuple[str, dict[str, Any]]:
    """A job the worker killed, its letter handled (one alert), then retried by a caller (202)."""
    job_id = pipeline.submit("test_dies_once", {})
    pipeline.run_worker()
    (letter,) = pipeline.receive(pipeline.dlq_url)
    assert pipeline.run_dead_letter([letter]) == {"batchItemFailures": []}
    assert len(pipeline.alerts()) == 1
    assert pipeline.request("POST", f"/jobs/{job_id}/retry").status == 202
    return job_id, letter


@pytest.mark.usefixtures("dies_once")
def test_the_same_letter_after_a_retry_leaves_the_job_to_run_to_done(pipeline: Pipeline) -> None:
    """die -> letter -> retry -> the same letter again -> done, one alert in all. Seen to fail (the
    job killed by the copy, never run again) with the consumer's `letter.attempt_total is not None`
    branch removed, so that the copy is taken for a redrive."""
    job_id, letter = died_and_alerted(pipeline)

    copy_of(pipeline, letter)
    assert pipeline.run_dead_letter() == {"batchItemFailures": []}  # before the retry's message runs
    assert pipeline.job(job_id)["status"] == "pending"
    pipeline.drain()

    job = pipeline.job(job_id)
    assert job["status"] == "done"
    assert job["result"] == {"runs": 2}
    assert _runs == [1, 1]  # ran once per life, never twice
    assert pipeline.alerts() == []  # nothing after the first one
    assert pipeline.visible(pipeline.dlq_url) == 0


@pytest.mark.usefixtures("dies_once")
def test_a_stale_letter_leaves_a_retried_job_that_is_running_alone(
    pipeline: Pipeline, store: JobStore
) -> None:
    """The retried job is already running when the copy arrives: its outcome is accepted. Seen to
    fail (StaleAttemptError on `complete`) with the attempt fence removed, as above."""
    job_id, letter = died_and_alerted(pipeline)
    running = store.claim(job_id, lease_seconds=300)

    copy_of(pipeline, letter)
    assert pipeline.run_dead_letter() == {"batchItemFailures": []}

    assert store.complete(running, {"ran": True}).status is JobStatus.DONE
    pipeline.drain()  # the retry's message finds the job done: a duplicate, dropped
    assert pipeline.job(job_id)["status"] == "done"
    assert pipeline.alerts() == []


@pytest.mark.usefixtures("dies_once")
def test_a_letter_about_an_earlier_death_alerts_nothing_when_the_job_died_again(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Retried, then dead again (attempt 2): the first death's copy says nothing, the second death's
    letter alerts once. Seen to fail with `job.attempt_total != letter.attempt_total` dropped."""
    job_id, letter = died_and_alerted(pipeline)
    store.fail(store.claim(job_id, 60), "dies again")
    pipeline.receive(pipeline.queue_url)  # the retry's message, consumed by the run above

    copy_of(pipeline, letter)
    assert pipeline.run_dead_letter() == {"batchItemFailures": []}
    assert pipeline.alerts() == []


def test_a_message_redriven_after_a_retry_but_sent_before_it_does_not_kill_the_job(
    pipeline: Pipeline, store: JobStore
) -> None:
    """A copy of the job's first message, sent before the retry, redriven after it (the retry's own
    send failed, so it is the only one): the job stays pending for its new life. Seen to fail (the
    job dead, a second alert) with `mark_dead`'s `job.reopened_at >= sent_at` check removed."""
    job_id = pipeline.submit("test_echo", {})
    store.fail(store.claim(job_id, 60), "died while its first message was still queued")
    fail_sends()
    assert pipeline.request("POST", f"/jobs/{job_id}/retry").status == 202
    clients.reset()

    assert pipeline.fail_until_redriven() > 0
    letters = pipeline.receive(pipeline.dlq_url)
    assert pipeline.run_dead_letter(letters) == {"batchItemFailures": []}

    assert store.get(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]
    assert pipeline.alerts() == []
    JobQueue(pipeline.queue_url).send_job(store.get(job_id))  # type: ignore[arg-type]  # as the recovery sweep does
    pipeline.drain()
    assert pipeline.job(job_id)["status"] == "done"


def test_a_message_sent_after_the_retry_and_redriven_still_kills_the_job(
    pipeline: Pipeline, store: JobStore
) -> None:
    """The fence holds back only the past: the retry's own message, redriven, kills and alerts."""
    job_id = pipeline.submit("test_echo", {})
    pipeline.receive(pipeline.queue_url)  # the first message: taken, never settled
    store.fail(store.claim(job_id, 60), "boom")
    assert pipeline.request("POST", f"/jobs/{job_id}/retry").status == 202
    pipeline.sqs.purge_queue(QueueUrl=pipeline.queue_url)
    JobQueue(pipeline.queue_url).send_job(store.get(job_id))  # type: ignore[arg-type]  # sent after the retry

    assert pipeline.fail_until_redriven() > 0
    assert pipeline.run_dead_letter() == {"batchItemFailures": []}

    assert store.get(job_id).status is JobStatus.DEAD  # type: ignore[union-attr]
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]
