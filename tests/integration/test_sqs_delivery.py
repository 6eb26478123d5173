"""The test pipeline delivers SQS batches by the local runtime's rules (local_runtime/esm.py), and SQS
itself redrives a message to the dead-letter queue after the queue's `maxReceiveCount` receives."""

import json
from typing import Any

import boto3

from lambdas import config
from tests.support.pipeline import Pipeline


def _send(pipeline: Pipeline, *bodies: str) -> list[dict[str, Any]]:
    """Send the bodies and receive them as one batch."""
    for body in bodies:
        boto3.client("sqs").send_message(QueueUrl=pipeline.queue_url, MessageBody=body)
    records = pipeline.receive(pipeline.queue_url)
    assert sorted(r["body"] for r in records) == sorted(bodies)
    return records


def test_records_name_the_queue_they_came_from(pipeline: Pipeline) -> None:
    (record,) = _send(pipeline, "a")

    arn = boto3.client("sqs").get_queue_attributes(QueueUrl=pipeline.queue_url, AttributeNames=["QueueArn"])
    assert record["eventSourceARN"] == arn["Attributes"]["QueueArn"]
    assert record["attributes"]["ApproximateReceiveCount"] == "1"


def test_only_the_reported_messages_stay(pipeline: Pipeline) -> None:
    records = _send(pipeline, "a", "b")
    failed = next(r for r in records if r["body"] == "b")

    delivery = pipeline.deliver(
        pipeline.queue_url,
        records,
        lambda _e, _c: {"batchItemFailures": [{"itemIdentifier": failed["messageId"]}]},
    )

    assert delivery.kept == [failed]
    pipeline.make_visible(delivery.kept)
    assert [r["body"] for r in pipeline.receive(pipeline.queue_url)] == ["b"]


def test_an_unknown_item_identifier_fails_the_whole_batch(pipeline: Pipeline) -> None:
    records = _send(pipeline, "a", "b")

    delivery = pipeline.deliver(
        pipeline.queue_url,
        records,
        lambda _e, _c: {"batchItemFailures": [{"itemIdentifier": "not-in-batch"}]},
    )

    assert delivery.kept == records
    pipeline.make_visible(delivery.kept)
    assert sorted(r["body"] for r in pipeline.receive(pipeline.queue_url)) == ["a", "b"]


def test_a_message_never_deleted_is_redriven_after_max_receive_count(pipeline: Pipeline) -> None:
    boto3.client("sqs").send_message(QueueUrl=pipeline.queue_url, MessageBody=json.dumps({"jobId": "j-1"}))

    receives = pipeline.fail_until_redriven()

    assert receives == config.MAX_RECEIVE_COUNT
    (letter,) = pipeline.receive(pipeline.dlq_url)
    assert json.loads(letter["body"]) == {"jobId": "j-1"}
    assert pipeline.visible(pipeline.queue_url) == 0
