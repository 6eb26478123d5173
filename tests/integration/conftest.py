"""Integration layer: handlers called in-process under moto, resources created from the synthesized template."""

import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from lambdas.jobs import registry
from local_runtime.provision import provision
from tests.support.job_types import TEST_JOB_TYPES
from tests.support.pipeline import Pipeline

HANDLERS = (
    "lambdas.handlers.api.handler",
    "lambdas.handlers.worker.handler",
    "lambdas.handlers.dead_letter.handler",
    "lambdas.handlers.recovery.handler",
)


def _atomic_conditional_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB checks a condition and applies the write as one step; moto's in-process backend does
    not serialise threads, so concurrent claims in these tests would race where AWS never does."""
    lock = threading.RLock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return call

    for name in ("put_item", "update_item", "delete_item", "transact_write_items", "get_item"):
        monkeypatch.setattr(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))


@pytest.fixture
def pipeline(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    _atomic_conditional_writes(monkeypatch)
    with mock_aws():
        provisioned = provision(template)
        env: dict[str, str] = {}
        for handler in HANDLERS:
            env.update(provisioned.function_env(handler))
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        outputs = provisioned.outputs
        sqs, sns = boto3.client("sqs"), boto3.client("sns")
        alert_queue = sqs.create_queue(QueueName="test-alerts")["QueueUrl"]
        alert_arn = sqs.get_queue_attributes(QueueUrl=alert_queue, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        sns.subscribe(TopicArn=outputs["AlertsTopicArn"], Protocol="sqs", Endpoint=alert_arn)
        yield Pipeline(
            env=env,
            queue_url=outputs["QueueUrl"],
            dlq_url=outputs["DeadLetterQueueUrl"],
            table=outputs["JobsTableName"],
            topic_arn=outputs["AlertsTopicArn"],
            alert_queue_url=alert_queue,
        )


@pytest.fixture
def test_types() -> None:
    """Register the test-only job types (removed again after the test by the autouse fixture)."""
    for job_type in TEST_JOB_TYPES:
        registry.register(job_type)
