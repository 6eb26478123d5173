"""Two mappings of one function (a worker group's queue and its high queue) poll and invoke apart: the
queue's backlog, holding every invocation its mapping may run, does not delay the high queue's message."""

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


def _mapping(sqs: Any, name: str) -> EventSourceMapping:
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    return EventSourceMapping(
        logical_id=name,
        function="F",
        queue=name,
        queue_url=url,
        queue_arn=f"arn:aws:sqs:us-east-1:123456789012:{name}",
        batch_size=1,
        batching_window_seconds=0,
        report_batch_item_failures=True,
        maximum_concurrency=2,
    )


def test_a_busy_mappings_backlog_does_not_delay_the_other_mappings_message(sqs: Any) -> None:
    """Seen to fail with both sources' invocations taken through one `threading.BoundedSemaphore(2)`
    (a pool sized for one mapping, not the sum `Runtime._start_pools` gives it): the high message
    waited for the backlog."""
    queue, high = _mapping(sqs, "queue"), _mapping(sqs, "high")
    release = threading.Event()
    busy = threading.Semaphore(0)
    high_ran = threading.Event()

    def invoke(event: dict[str, Any]) -> Invocation:
        if event["Records"][0]["eventSourceARN"] == high.queue_arn:
            high_ran.set()
        else:
            busy.release()
            release.wait(30)  # every batch of the backlog holds its invocation
        return Invocation(request_id="r", ok=True, result={"batchItemFailures": []})

    sources = [SqsEventSource(m, "F", sqs, invoke, "us-east-1") for m in (queue, high)]
    for source in sources:
        source.start()
    try:
        for i in range(20):
            sqs.send_message(QueueUrl=queue.queue_url, MessageBody=f'{{"n": {i}}}')
        assert busy.acquire(timeout=30)
        assert busy.acquire(timeout=30)
        sqs.send_message(QueueUrl=high.queue_url, MessageBody='{"high": true}')
        assert high_ran.wait(15)
    finally:
        release.set()
        for source in sources:
            source.stop()
