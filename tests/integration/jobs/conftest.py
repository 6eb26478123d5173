"""Fixtures for the job types: the stack's resources (from the synthesized template, through the
`pipeline` fixture), and a webhook receiver on loopback."""

from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest

from lambdas import config
from lambdas.lifecycle.requests.webhook_secrets import WebhookSecrets
from lambdas.models import settings
from lambdas.store.webhook_secrets import WebhookSecretStore
from tests.support.pipeline import Pipeline
from tests.support.webhook_receiver import Receiver


@dataclass(frozen=True)
class Stack:
    pipeline: Pipeline
    jobs_table: str
    deliveries_table: str
    bucket: str
    sender: str
    secrets_table: str

    def secret_of(self, client: str) -> str:
        """A client's current webhook signing secret (made on first use): what its receivers configure."""
        return WebhookSecrets(WebhookSecretStore(self.secrets_table)).of(client).current


@pytest.fixture
def stack(pipeline: Pipeline) -> Iterator[Stack]:
    env = pipeline.env
    # Verifying the sender is the operator's step in SES, outside the stack.
    boto3.client("sesv2").create_email_identity(EmailIdentity=env[config.ENV_SENDER_EMAIL])
    settings.reset()
    yield Stack(
        pipeline=pipeline,
        jobs_table=env[config.ENV_JOBS_TABLE],
        deliveries_table=env[config.ENV_DELIVERIES_TABLE],
        bucket=env[config.ENV_UPLOADS_BUCKET],
        sender=env[config.ENV_SENDER_EMAIL],
        secrets_table=env[config.ENV_WEBHOOK_SECRETS_TABLE],
    )
    settings.reset()


@pytest.fixture
def loopback_webhooks(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Stack:
    """What the local runtime sets: plain http and 127.0.0.0/8 targets allowed (and nothing else).

    Applied over the stack's own environment (where ALLOW_HTTP_WEBHOOKS is false)."""
    monkeypatch.setenv(config.ENV_ALLOW_HTTP_WEBHOOKS, "true")
    monkeypatch.setenv(config.ENV_WEBHOOK_ALLOW_LOOPBACK, "true")
    settings.reset()
    return stack


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running
