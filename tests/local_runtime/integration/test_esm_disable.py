"""`disable` then `wait_idle`: once it returns True, no receive or batch of the source is in flight."""

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_runtime.esm import SqsEventSource
from local_runtime.lambda_pool import Invocation
from local_runtime.template import EventSourceMapping


@pytest.fixture
def sqs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def test_wait_idle_waits_for_the_batch_in_flight(sqs: Any) -> None:
    # given a source whose function is busy with a batch
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    mapping = EventSourceMapping(
        logical_id="M",
        function="F",
        queue="Q",
        queue_url=url,
        queue_arn="arn:aws:sqs:us-east-1:123456789012:q",
        batch_size=10,
        batching_window_seconds=0,
        report_batch_item_failures=True,
        maximum_concurrency=2,
    )
    started, release = threading.Event(), threading.Event()

    def invoke(_: dict[str, Any]) -> Invocation:
        started.set()
        release.wait(30)
        return Invocation(request_id="r", ok=True, result={"batchItemFailures": []})

    source = SqsEventSource(mapping, "F", sqs, invoke, "us-east-1")
    source.start()
    try:
        sqs.send_message(QueueUrl=url, MessageBody="{}")
        assert started.wait(30)

        # when it is disabled, it is not idle while the batch runs
        source.disable()
        assert not source.wait_idle(timeout=0.3)

        # then it is idle once the batch ends
        release.set()
        assert source.wait_idle(timeout=30)
    finally:
        release.set()
        source.stop()
