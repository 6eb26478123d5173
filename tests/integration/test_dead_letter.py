"""The dead-letter consumer: one dead job and one alert per lost job, never over `done`."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from botocore.exceptions import ClientError

from lambdas import config
from lambdas.lifecycle.dead_letter import ALERT_LEASE_SECONDS, DeadLetter, DeadLetterConsumer, Verdict
from lambdas.models.job import AlertClaim, Job
from lambdas.store.alerts import Alerts
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline
from tests.support.stores import store_from_env

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
    return DeadLetterConsumer(store, Alerts(pipeline.topic_arn))


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
    assert sorted(verdicts) == [Verdict.ALERT_PENDING, Verdict.ALERTED]
    later = consumer_for(pipeline, store_from_env(pipeline.env))
    assert later.handle(letter(job_id, "m-2")) is Verdict.ALREADY_ALERTED
    assert pipeline.alerts() == []


def test_a_crash_between_claim_and_publish_repeats_the_alert_after_the_lease(pipeline: Pipeline) -> None:
    # given a consumer that claimed the alert and died before publishing
    job_id = dead_job(pipeline)
    now = [time.time()]
    store = store_from_env(pipeline.env, clock=lambda: now[0])
    assert store.claim_alert(store.get(job_id), ALERT_LEASE_SECONDS) is AlertClaim.CLAIMED
    consumer = consumer_for(pipeline, store)

    # when a letter arrives while the claim holds, it waits; after the lease, it raises the alert
    assert consumer.handle(letter(job_id, "m-1")) is Verdict.ALERT_PENDING
    assert pipeline.alerts() == []
    now[0] += ALERT_LEASE_SECONDS + 1
    assert consumer.handle(letter(job_id, "m-1")) is Verdict.ALERTED

    # then exactly one alert went out, and the job says so
    assert [a["jobId"] for a in pipeline.alerts()] == [job_id]
    assert consumer.handle(letter(job_id, "m-1")) is Verdict.ALREADY_ALERTED


def test_a_letter_for_a_job_whose_alert_is_claimed_stays_on_the_queue(pipeline: Pipeline) -> None:
    job_id = dead_job(pipeline)
    claims = store_from_env(pipeline.env)
    claims.claim_alert(claims.get(job_id), ALERT_LEASE_SECONDS)
    letters = pipeline.receive(pipeline.dlq_url)

    response = pipeline.run_dead_letter(letters)

    assert response["batchItemFailures"] == [{"itemIdentifier": letters[0]["messageId"]}]
    assert pipeline.alerts() == []
