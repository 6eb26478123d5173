"""Integration layer: handlers called in-process under moto, resources created from the synthesized template."""

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambdas import config
from lambdas.jobs import registry
from lambdas.lifecycle.requests.webhook_secrets import WebhookSecrets
from lambdas.store.jobs import JobStore
from lambdas.store.limits import LimitStore
from lambdas.store.schedules import ScheduleStore
from local_runtime import s3_post_policy
from local_runtime.fair_queues import serve_fairly
from local_runtime.moto_main import serialise_item_operations
from local_runtime.template import provision
from tests.support.job_types import TEST_JOB_TYPES
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env
from tests.support.transitions import log_lines  # noqa: F401 - a fixture: the transition tests read the log

HANDLERS = (
    "lambdas.handlers.api.handler",
    "lambdas.handlers.worker.handler",
    "lambdas.handlers.dead_letter.handler",
    "lambdas.handlers.recovery.handler",
    "lambdas.handlers.schedules.handler",
)


@pytest.fixture
def pipeline(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Pipeline]:
    # DynamoDB checks a condition and applies the write as one step; moto's backend does not serialise
    # threads, so concurrent claims in these tests would race where AWS never does.
    serialise_item_operations(monkeypatch.setattr)
    serve_fairly(monkeypatch.setattr)  # SQS fair queues, as the local runtime serves them
    with mock_aws():
        # moto stores any form POST; S3 checks its policy first (the size limit, the owner).
        credentials = {os.environ["AWS_ACCESS_KEY_ID"]: os.environ["AWS_SECRET_ACCESS_KEY"]}
        s3_post_policy.enforce(monkeypatch.setattr, credentials)
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
        shared = provisioned.function(HANDLERS[1])
        groups = [f for f in provisioned.functions.values() if f.handler == HANDLERS[1] and f is not shared]
        group_workers = {
            f.environment[config.ENV_QUEUE_URL]: {
                name: value for name, value in f.environment.items() if shared.environment.get(name) != value
            }
            for f in groups
        }
        yield Pipeline(
            env=env,
            queue_url=outputs["QueueUrl"],
            dlq_url=outputs["DeadLetterQueueUrl"],
            table=outputs["JobsTableName"],
            topic_arn=outputs["AlertsTopicArn"],
            alert_queue_url=alert_queue,
            mappings=provisioned.event_source_mappings,
            group_workers=group_workers,
            group_dlq_urls=[f.environment[config.ENV_DLQ_URL] for f in groups],
        )


@pytest.fixture
def test_types() -> None:
    """Register the test-only job types (removed again after the test by the autouse fixture)."""
    for job_type in TEST_JOB_TYPES:
        registry.register(job_type)


@pytest.fixture
def store(pipeline: Pipeline) -> JobStore:
    """A JobStore built from the stack's function environment (its table, shard count and TTL)."""
    return store_from_env(pipeline.env)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Every JobStore's time, the handlers' own stores included, and the webhook secrets' (their
    rotation overlap), moved by the test instead of slept; a worker's wait for a reserved start moves it."""
    fake = Clock()
    monkeypatch.setattr(JobStore, "now", lambda self: fake())
    monkeypatch.setattr(LimitStore, "now", lambda self: fake())
    monkeypatch.setattr(LimitStore, "sleep", lambda self, seconds: fake.advance(max(seconds, 0)))
    monkeypatch.setattr(ScheduleStore, "now", lambda self: fake())
    monkeypatch.setattr(WebhookSecrets, "now", staticmethod(fake))
    return fake
