"""The pure parts of the event source mapping: the SQS event's shape and the partial batch response rules."""

import json
from pathlib import Path

import pytest

from local_runtime.esm import failed_message_ids, sqs_record

SAMPLE = json.loads((Path(__file__).parents[2] / "events" / "sqs_batch.json").read_text())
BATCH = ["m-1", "m-2", "m-3"]


def _received(attributes: dict[str, object] | None = None) -> dict[str, object]:
    message: dict[str, object] = {
        "MessageId": "m-1",
        "ReceiptHandle": "rh-1",
        "MD5OfBody": "md5",
        "Body": '{"jobId": "j-1"}',
        "Attributes": {
            "SenderId": "AIDAIENQZJOLO23YVJ4VO",
            "ApproximateFirstReceiveTimestamp": "1796076000012",
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1796076000000",
        },
    }
    if attributes:
        message["MessageAttributes"] = attributes
        message["MD5OfMessageAttributes"] = "md5-attributes"
    return message


def test_record_has_the_shape_of_the_canonical_event() -> None:
    # given the plain record (first sample) and one with a string attribute (second sample)
    plain = sqs_record(_received(), "arn:aws:sqs:us-east-1:123456789012:q", "us-east-1")
    with_attribute = sqs_record(
        _received({"reason": {"StringValue": "why", "DataType": "String"}}),
        "arn:aws:sqs:us-east-1:123:q",
        "us-east-1",
    )

    assert list(plain) == list(SAMPLE["Records"][0])
    assert sorted(with_attribute) == sorted(SAMPLE["Records"][1])
    assert list(plain["attributes"]) == list(SAMPLE["Records"][0]["attributes"])
    assert with_attribute["messageAttributes"]["reason"] == {
        "stringValue": "why",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert (plain["eventSource"], plain["awsRegion"]) == ("aws:sqs", "us-east-1")


@pytest.mark.parametrize("response", [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}])
def test_nothing_reported_means_the_whole_batch_succeeded(response: object) -> None:
    assert failed_message_ids(response, BATCH) == set()


def test_reported_messages_are_the_only_ones_kept() -> None:
    response = {"batchItemFailures": [{"itemIdentifier": "m-2"}, {"itemIdentifier": "m-3"}]}

    assert failed_message_ids(response, BATCH) == {"m-2", "m-3"}


@pytest.mark.parametrize(
    "response",
    [
        {"batchItemFailures": [{"itemIdentifier": "m-9"}]},
        {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": ""}]},
        {"batchItemFailures": [{"itemIdentifier": None}]},
        {"batchItemFailures": [{"messageId": "m-1"}]},
        {"batchItemFailures": "m-1"},
        "not a response object",
    ],
    ids=["unknown-id", "empty-id", "null-id", "bad-key", "not-a-list", "not-an-object"],
)
def test_an_unusable_response_fails_the_whole_batch(response: object) -> None:
    assert failed_message_ids(response, BATCH) is None
