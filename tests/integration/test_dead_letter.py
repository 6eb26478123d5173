"""The dead-letter consumer: one dead job and one alert per lost job, never over `done`."""

import json

import boto3
import pytest
from botocore.exceptions import ClientError

from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


def redrive(pipeline: Pipeline, job_id: str) -> None:
    """What SQS does after maxReceiveCount receives: the message lands on the DLQ as it was."""
    boto3.client("sqs").send_message(QueueUrl=pipeline.dlq_url, MessageBody=json.dumps({"jobId": job_id}))


def test_a_redriven_message_marks_its_job_dead_and_alerts(pipeline: Pipeline, store: JobStore) -> None:
    job_id = pipeline.submit("test_echo", {})
    pipeline.receive(pipeline.queue_url)
    store.claim(job_id, lease_seconds=300)
    redrive(pipeline, job_id)

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
    redrive(pipeline, job_id)

    pipeline.run_dead_letter()

    assert pipeline.job(job_id)["status"] == "done"
    assert pipeline.alerts() == []
    assert pipeline.visible(pipeline.dlq_url) == 0


def test_repeated_letters_for_one_job_raise_one_alert(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_permanent", {})
    pipeline.run_worker()  # forwards one letter
    redrive(pipeline, job_id)
    redrive(pipeline, job_id)

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
