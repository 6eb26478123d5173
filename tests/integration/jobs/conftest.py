"""Fixtures for the job types under moto: the stack's resources, a webhook receiver on loopback."""

import secrets
import string
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from lambdas import config
from lambdas.jobs import settings as type_settings
from lambdas.store import clients, schema
from tests.support.webhook_receiver import Receiver

SENDER = "notifications@offload.example.com"


@dataclass(frozen=True)
class Stack:
    jobs_table: str
    deliveries_table: str
    queue_url: str
    dlq_url: str
    bucket: str
    secret_arn: str
    secret: str


def _tables(ddb) -> tuple[str, str]:
    ddb.create_table(
        TableName="jobs",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.JOBS_PK, "AttributeType": "S"},
            {"AttributeName": schema.STATUS_INDEX_PK, "AttributeType": "S"},
            {"AttributeName": schema.STATUS_INDEX_SK, "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": schema.JOBS_PK, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": schema.STATUS_INDEX,
                "KeySchema": [
                    {"AttributeName": schema.STATUS_INDEX_PK, "KeyType": "HASH"},
                    {"AttributeName": schema.STATUS_INDEX_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    ddb.create_table(
        TableName="deliveries",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": schema.DELIVERIES_PK, "AttributeType": "S"},
            {"AttributeName": schema.DELIVERIES_SK, "AttributeType": "S"},
            {"AttributeName": schema.ENDPOINT_INDEX_PK, "AttributeType": "S"},
            {"AttributeName": schema.ENDPOINT_INDEX_SK, "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": schema.DELIVERIES_PK, "KeyType": "HASH"},
            {"AttributeName": schema.DELIVERIES_SK, "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": schema.ENDPOINT_INDEX,
                "KeySchema": [
                    {"AttributeName": schema.ENDPOINT_INDEX_PK, "KeyType": "HASH"},
                    {"AttributeName": schema.ENDPOINT_INDEX_SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    return "jobs", "deliveries"


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    clients.reset()
    with mock_aws():
        jobs, deliveries = _tables(boto3.client("dynamodb"))
        sqs = boto3.client("sqs")
        dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
        queue = sqs.create_queue(QueueName="main")["QueueUrl"]
        boto3.client("s3").create_bucket(Bucket="uploads")
        secret = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(48))
        arn = boto3.client("secretsmanager").create_secret(Name="webhook", SecretString=secret)["ARN"]
        boto3.client("sesv2").create_email_identity(EmailIdentity=SENDER)
        env = {
            config.ENV_JOBS_TABLE: jobs,
            config.ENV_DELIVERIES_TABLE: deliveries,
            config.ENV_QUEUE_URL: queue,
            config.ENV_DLQ_URL: dlq,
            config.ENV_UPLOADS_BUCKET: "uploads",
            config.ENV_WEBHOOK_SECRET_ARN: arn,
            config.ENV_SENDER_EMAIL: SENDER,
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        type_settings.reset()
        yield Stack(jobs, deliveries, queue, dlq, "uploads", arn, secret)
    type_settings.reset()
    clients.reset()


@pytest.fixture
def loopback_webhooks(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the local runtime sets: plain http and 127.0.0.1 targets allowed (and nothing else)."""
    monkeypatch.setenv(config.ENV_ALLOW_HTTP_WEBHOOKS, "true")
    monkeypatch.setenv(config.ENV_WEBHOOK_ALLOW_LOOPBACK, "true")
    type_settings.reset()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running
