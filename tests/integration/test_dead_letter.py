"""The dead-letter consumer: one dead job and one alert per lost job, never over `done`."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.exceptions import ClientError

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import Capability, JobContext, JobType, PermanentJobError, RetryableJobError
from lambdas.lifecycle.sweeps.dead_letter import (
    ALERT_LEASE_SECONDS,
    DeadLetter,
    DeadLetterConsumer,
    LetterVerdict,
)
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import AlertClaim, Job, JobStatus
from lambdas.models.timestamps import iso_time
from lambdas.store import codec, schema
from lambdas.store.alert_groups import AlertGroups
from lambdas.store.alerts import Alerts
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from tests.support.deliveries import every_attempt
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env

pytestmark = pytest.mark.usefixtures("test_types")


def late_letter(pipeline: Pipeline, job_id: str) -> None:
    """A duplicate of a job's message reaching the DLQ after the job was settled (SQS's at-least-once
    delivery: a copy redriven after the original was handled)."""
    boto3.client("sqs").send_message(QueueUrl=pipeline.dlq_url, MessageBody=json.dumps({"jobId": job_id}))


def test_a_redriven_message_marks_its_job_dead_and_alerts(pipeline: Pipeline, store: JobStore) -> None:
    # given a job whose worker claimed it and then crashed on every delivery of its message
    job_id = pipeline.submit("test_echo", {})
    store.claim(job_id, lease_seconds=300)
    # when SQS itself redrives the message after maxReceiveCount receives
    assert pipeline.fail_until_redriven() == config.MAX_RECEIVE_COUNT

    assert pipeline.run_dead_letter() == {"batchItemFailures": []}

    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert "received too many times" in job["lastError"]
    alerts = pipeline.alerts()
    assert [(a["jobId"], a["jobType"]) for a in alerts] == [(job_id, "test_echo")]
    assert alerts[0]["lastError"] == job["lastError"]


def test_a_done_job_is_never_marked_dead(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_echo", {})
    pipeline.run_worker()
    late_letter(pipeline, job_id)

    pipeline.run_dead_letter()

    assert pipeline.job(job_id)["status"] == "done"
    assert pipeline.alerts() == []
    assert pipeline.visible(pipeline.dlq_url) == 0


def test_repeated_letters_for_one_job_raise_one_alert(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_permanent", {})
    pipeline.run_worker()  # forwards one letter
    late_letter(pipeline, job_id)
    late_letter(pipeline, job_id)

    pipeline.drain()

    assert len(pipeline.alerts()) == 1
    assert pipeline.job(job_id)["status"] == "dead"


def test_a_letter_survives_an_alerting_outage(pipeline: Pipeline) -> None:
    from lambdas.store import clients

    job_id = pipeline.submit("test_permanent", {})
    pipeline.run_worker()

    def refuse(**_: object) -> None:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "injected"}}, "Publish")

    clients.client("sns").meta.events.register("before-call.sns.Publish", refuse)
    letters = pipeline.receive(pipeline.dlq_url)
    response = pipeline.run_dead_letter(letters)
    assert response["batchItemFailures"] == [{"itemIdentifier": letters[0]["messageId"]}]

    clients.reset()
    pipeline.sqs.change_message_visibility(
        QueueUrl=pipeline.dlq_url, ReceiptHandle=letters[0]["receiptHandle"], VisibilityTimeout=0
    )
    pipeline.run_dead_letter()
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]


def consumer_for(pipeline: Pipeline, store: JobStore) -> DeadLetterConsumer:
    return DeadLetterConsumer(
        store, Alerts(pipeline.topic_arn), AlertGroups(pipeline.table), config.ALERT_WINDOW_SECONDS
    )


def dead_job(pipeline: Pipeline) -> str:
    """A job the worker killed, whose alert has not been raised (its letter is still on the DLQ)."""
    job_id = pipeline.submit("test_permanent", {})
    pipeline.run_worker()
    assert pipeline.job(job_id)["status"] == "dead"
    return job_id


def letter(job_id: str, message_id: str) -> DeadLetter:
    return DeadLetter(message_id, json.dumps({"jobId": job_id}), "permanent", 1)


def test_concurrent_letters_for_one_dead_job_raise_one_alert(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given two consumers that have both read the job as dead and not alerted
    job_id = dead_job(pipeline)
    store = store_from_env(pipeline.env)
    both_have_read = threading.Barrier(2, timeout=10)
    read = store.mark_dead

    def read_then_wait(job_id: str, error: str, sent_at: int | None = None) -> Job | None:
        job = read(job_id, error, sent_at)
        both_have_read.wait()
        return job

    monkeypatch.setattr(store, "mark_dead", read_then_wait)
    consumer = consumer_for(pipeline, store)

    # when both go on at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = list(pool.map(consumer.handle, [letter(job_id, "m-1"), letter(job_id, "m-2")]))

    # then one alert; the other letter stays on the queue and, when it returns, finds the alert sent
    assert len(pipeline.alerts()) == 1
    assert sorted(verdicts) == [LetterVerdict.ALERT_PENDING, LetterVerdict.ALERTED]
    later = consumer_for(pipeline, store_from_env(pipeline.env))
    assert later.handle(letter(job_id, "m-2")) is LetterVerdict.ALREADY_ALERTED
    assert pipeline.alerts() == []


def test_a_crash_between_claim_and_publish_repeats_the_alert_after_the_lease(pipeline: Pipeline) -> None:
    # given a consumer that claimed the alert and died before publishing
    job_id = dead_job(pipeline)
    now = [time.time()]
    store = store_from_env(pipeline.env, clock=lambda: now[0])
    assert store.claim_alert(store.get(job_id), ALERT_LEASE_SECONDS) is AlertClaim.CLAIMED
    consumer = consumer_for(pipeline, store)

    # when a letter arrives while the claim holds, it waits; after the lease, it raises the alert
    assert consumer.handle(letter(job_id, "m-1")) is LetterVerdict.ALERT_PENDING
    assert pipeline.alerts() == []
    now[0] += ALERT_LEASE_SECONDS + 1
    assert consumer.handle(letter(job_id, "m-1")) is LetterVerdict.ALERTED

    # then exactly one alert went out, and the job says so
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]
    assert consumer.handle(letter(job_id, "m-1")) is LetterVerdict.ALREADY_ALERTED


def test_a_letter_for_a_job_whose_alert_is_claimed_stays_on_the_queue(pipeline: Pipeline) -> None:
    job_id = dead_job(pipeline)
    claims = store_from_env(pipeline.env)
    claims.claim_alert(claims.get(job_id), ALERT_LEASE_SECONDS)
    letters = pipeline.receive(pipeline.dlq_url)

    response = pipeline.run_dead_letter(letters)

    assert response["batchItemFailures"] == [{"itemIdentifier": letters[0]["messageId"]}]
    assert pipeline.alerts() == []


def test_a_letter_that_stays_holds_back_none_of_its_batch(pipeline: Pipeline) -> None:
    """Seen to fail with the handler's loop stopping at the first letter that fails."""
    held, alerted = dead_job(pipeline), dead_job(pipeline)
    claims = store_from_env(pipeline.env)
    claims.claim_alert(claims.get(held), ALERT_LEASE_SECONDS)
    letters = sorted(pipeline.receive(pipeline.dlq_url), key=lambda m: json.loads(m["body"])["jobId"] != held)
    assert [json.loads(m["body"])["jobId"] for m in letters] == [held, alerted]

    response = pipeline.run_dead_letter(letters)

    assert response["batchItemFailures"] == [{"itemIdentifier": letters[0]["messageId"]}]
    assert [a["jobId"] for a in pipeline.alerts()] == [alerted]


# A dead job's alert says everything an operator needs without opening the job.
#
# Found by `make mutate` (a mutant of `DeadLetterConsumer._alert` no test failed on). The test was first
# run against the one-line break its docstring names, seen to fail, then restored.


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
        # and its group's: the first death of a quiet (type, owner) is an alert of one
        "owner": store_from_env(pipeline.env).get(job_id).owner,  # type: ignore[union-attr]
        "dead": 1,
        "windowSeconds": config.ALERT_WINDOW_SECONDS,
        "firstDead": [
            {
                "jobId": job_id,
                "attempts": 1,
                "maxAttempts": 1,
                "lastError": job["lastError"],
                "parentId": None,
            }
        ],
    }
    assert job["lastError"]


# A dead job's message forwarded to the dead-letter queue again says which job and why.
#
# Found by `make mutate` (mutants of `Worker._not_claimed` no test failed on). The test was first run
# against the one-line break its docstring names, seen to fail, then restored.


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


# Going dead: a late attempt's failure (permanent or not) does not touch the job a newer attempt runs,
# and a job the dead-letter path ends leaves the sweeper's index. Found by `make mutate` (mutants of
# `Worker._dead`, `Worker._retry` and `JobStore.mark_dead` no test failed on); each test was first run
# against the one-line break its docstring names, seen to fail, then restored.


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

    registry.register(
        JobType("test_too_late", EchoPayload, too_late, uses=frozenset({Capability.DELIVERY_LOG}))
    )
    job_id = pipeline.submit("test_too_late", {})

    assert pipeline.run_worker() == {"batchItemFailures": []}  # the late attempt's message is dropped

    job = store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 2)
    assert pipeline.visible(pipeline.dlq_url) == 0
    [line] = every_attempt(DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE]), "fan")
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


def test_a_job_that_moves_between_the_dead_letter_paths_read_and_write_is_decided_again(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write is conditioned on the state read; when the job moved meanwhile (a worker claimed it),
    `mark_dead` reads it again and ends it from its new state. Seen to fail against `mark_dead`'s
    `continue` after a StaleAttemptError as `break` (sample 581628's `xǁJobStoreǁmark_dead__mutmut_62`:
    None, as if the job had finished, and the job left processing)."""
    job_id = pipeline.submit("test_echo", {})
    read = store.get
    claimed: list[Job] = []

    def read_then_claimed(*args: object, **kwargs: object) -> Job | None:
        job = read(*args, **kwargs)  # type: ignore[arg-type]
        if not claimed:
            claimed.append(job)  # type: ignore[arg-type]
            claimed.append(store.claim(job_id, 60))
        return job

    monkeypatch.setattr(store, "get", read_then_claimed)

    dead = store.mark_dead(job_id, "redriven: the worker never finished it")

    assert claimed[1].status is JobStatus.PROCESSING
    assert dead is not None
    assert (dead.status, dead.attempts) == (JobStatus.DEAD, 1)
