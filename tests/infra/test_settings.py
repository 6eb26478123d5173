"""CDK context: parsed from the CLI's strings, checked before anything is built."""

from typing import Any

import pytest
from aws_cdk import App

from infra.bundling import REPO_ROOT
from infra.settings import CONTEXT_KEYS, PLACEHOLDER_SENDER, Settings
from lambdas import config


def _from(context: dict[str, Any]) -> Settings:
    return Settings.from_context(App(context=context).node)


def test_defaults_come_from_the_shared_config() -> None:
    settings = _from({})
    assert settings.worker_batch_size == config.WORKER_BATCH_SIZE
    assert settings.worker_batching_window_seconds == config.WORKER_BATCHING_WINDOW_SECONDS
    assert settings.worker_max_concurrency == config.WORKER_MAX_CONCURRENCY
    assert settings.recovery_rate_minutes == config.RECOVERY_RATE_MINUTES
    assert settings.backoff_base_seconds == config.BACKOFF_BASE_SECONDS
    assert settings.backoff_cap_seconds == config.BACKOFF_CAP_SECONDS
    assert settings.thumbnail_sizes == config.THUMBNAIL_SIZES
    assert settings.allow_http_webhooks is False
    assert settings.alert_email is None
    assert settings.sender_is_placeholder
    assert settings.sender_email == PLACEHOLDER_SENDER


def test_cli_strings_are_parsed() -> None:
    settings = _from(
        {
            "workerBatchSize": "7",
            "thumbnailSizes": "64, 256",
            "allowHttpWebhooks": "true",
            "senderEmail": "jobs@mail.example.org",
        }
    )
    assert settings.worker_batch_size == 7
    assert settings.thumbnail_sizes == (64, 256)
    assert settings.allow_http_webhooks is True
    assert settings.sender_domain == "mail.example.org"
    assert not settings.sender_is_placeholder


def test_json_values_are_taken_as_they_are() -> None:
    settings = _from({"thumbnailSizes": [32, 64], "allowHttpWebhooks": False, "apiQuotaPerDay": 10})
    assert settings.thumbnail_sizes == (32, 64)
    assert settings.allow_http_webhooks is False
    assert settings.api_quota_per_day == 10


@pytest.mark.parametrize(
    ("key", "value", "complaint"),
    [
        ("workerBatchSize", "ten", "workerBatchSize"),
        ("workerBatchSize", 0, "workerBatchSize must be"),
        ("workerBatchSize", 11, "needs workerBatchingWindowSeconds"),
        ("workerMaxConcurrency", 1, "workerMaxConcurrency must be"),
        ("workerBatchingWindowSeconds", 301, "workerBatchingWindowSeconds must be"),
        ("recoveryRateMinutes", 0, "recoveryRateMinutes must be"),
        ("backoffCapSeconds", 5, "backoffCapSeconds must be"),
        ("thumbnailSizes", "128,0", "thumbnailSizes"),
        ("thumbnailSizes", "", None),  # empty means "not set": the default applies
        ("allowHttpWebhooks", "maybe", "allowHttpWebhooks"),
        ("senderEmail", "not-an-address", "senderEmail"),
        ("alertEmail", "ops@", "alertEmail"),
        ("apiRateLimit", 0, "apiRateLimit must be"),
        ("apiQuotaPerDay", 1.5, "apiQuotaPerDay"),
    ],
)
def test_invalid_context_fails_synth_with_the_key_named(key: str, value: Any, complaint: str | None) -> None:
    context = {key: value}
    if key == "workerBatchSize" and value == 11:
        context["workerBatchingWindowSeconds"] = 0
    if complaint is None:
        _from(context)
        return
    with pytest.raises(ValueError, match=complaint):
        _from(context)


def test_every_documented_key_is_read() -> None:
    documented = (REPO_ROOT / "docs" / "configuration.md").read_text()
    for key in CONTEXT_KEYS:
        assert f"`{key}`" in documented, f"{key} is not documented in docs/configuration.md"
