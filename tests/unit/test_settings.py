"""Each function's environment is validated when it starts: no silent defaults for resource names."""

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from lambdas import config
from lambdas.models import settings
from lambdas.models.settings import (
    ApiSettings,
    DeadLetterSettings,
    Environment,
    RecoverySettings,
    WorkerSettings,
)

FUNCTION_SETTINGS = (ApiSettings, WorkerSettings, DeadLetterSettings, RecoverySettings)
WORKER_ENVIRONMENT = {
    config.ENV_JOBS_TABLE: "jobs",
    config.ENV_DELIVERIES_TABLE: "deliveries",
    config.ENV_QUEUE_URL: "q",
    config.ENV_DLQ_URL: "dlq",
    config.ENV_UPLOADS_BUCKET: "uploads",
    config.ENV_WEBHOOK_SECRET_ARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhooks",
    config.ENV_WEBHOOK_SECRETS_TABLE: "webhook-secrets",
    config.ENV_LIMITS_TABLE: "limits",
    config.ENV_SENDER_EMAIL: "jobs@example.org",
}


def test_a_missing_table_name_is_an_error_not_a_default() -> None:
    with pytest.raises(ValidationError, match=config.ENV_JOBS_TABLE):
        ApiSettings.load({config.ENV_QUEUE_URL: "https://sqs/q", config.ENV_UPLOADS_BUCKET: "b"})


@pytest.mark.parametrize(
    "name",
    [
        config.ENV_SENDER_EMAIL,
        config.ENV_WEBHOOK_SECRET_ARN,
        config.ENV_DELIVERIES_TABLE,
        config.ENV_WEBHOOK_SECRETS_TABLE,
        config.ENV_LIMITS_TABLE,
    ],
)
def test_the_worker_refuses_to_start_without_what_its_job_types_need(name: str) -> None:
    environment = {k: v for k, v in WORKER_ENVIRONMENT.items() if k != name}
    with pytest.raises(ValidationError, match=name):
        WorkerSettings.load(environment)


def test_tunables_take_their_documented_defaults() -> None:
    worker = WorkerSettings.load(WORKER_ENVIRONMENT)
    assert worker.backoff_base_seconds == config.BACKOFF_BASE_SECONDS
    assert worker.backoff_cap_seconds == config.BACKOFF_CAP_SECONDS
    assert worker.lease_seconds == config.LEASE_SECONDS
    assert worker.thumbnail_sizes == tuple(sorted(config.THUMBNAIL_SIZES, reverse=True))
    assert worker.max_file_bytes == config.MAX_FILE_BYTES
    assert (worker.allow_http_webhooks, worker.allow_loopback_webhooks) == (False, False)


def test_thumbnail_sizes_are_read_from_their_environment_form() -> None:
    worker = WorkerSettings.load({**WORKER_ENVIRONMENT, config.ENV_THUMBNAIL_SIZES: "64, 256,600,64"})
    assert worker.thumbnail_sizes == (600, 256, 64)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (config.ENV_THUMBNAIL_SIZES, str(config.MIN_THUMBNAIL_PIXELS - 1)),
        (config.ENV_THUMBNAIL_SIZES, f"128,{config.MAX_THUMBNAIL_PIXELS + 1}"),
        (config.ENV_BACKOFF_CAP_SECONDS, str(config.SQS_MAX_VISIBILITY_SECONDS + 1)),
        (config.ENV_BACKOFF_BASE_SECONDS, "0"),
        (config.ENV_MAX_FILE_BYTES, "0"),
    ],
)
def test_a_value_out_of_its_bounds_stops_the_worker(name: str, value: str) -> None:
    with pytest.raises(ValidationError, match=name):
        WorkerSettings.load({**WORKER_ENVIRONMENT, name: value})


def test_a_nonsense_tunable_is_refused() -> None:
    with pytest.raises(ValidationError):
        RecoverySettings.load(
            {
                config.ENV_JOBS_TABLE: "jobs",
                config.ENV_QUEUE_URL: "q",
                config.ENV_RECOVERY_GRACE_SECONDS: "-1",
            }
        )


@pytest.mark.parametrize("model", FUNCTION_SETTINGS)
def test_every_setting_is_read_from_an_environment_name_of_the_shared_config(
    model: type[Environment],
) -> None:
    # The stack builds each function's environment from these aliases, so they must be the contract's names.
    names = {value for key, value in vars(config).items() if key.startswith("ENV_")}
    for field_name, field in model.model_fields.items():
        assert field.alias in names, f"{model.__name__}.{field_name} is read from {field.alias!r}"


def test_loaders_read_the_environment_once_until_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in WORKER_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    first = settings.worker()
    monkeypatch.setenv(config.ENV_SENDER_EMAIL, "other@example.org")
    assert settings.worker() is first
    settings.reset()
    assert settings.worker().sender_email == "other@example.org"


def test_importing_the_handlers_reads_no_environment() -> None:
    # With nothing set, importing every handler still works: settings are loaded on the first invocation.
    code = "import lambdas.handlers.api, lambdas.handlers.dead_letter, lambdas.handlers.recovery, lambdas.handlers.worker"
    environment = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"}
    repo = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], env=environment, cwd=repo, check=True, capture_output=True)


def test_the_lease_outlives_the_worker_and_the_queue_hides_messages_long_enough() -> None:
    assert config.LEASE_SECONDS > config.WORKER_TIMEOUT_SECONDS
    assert config.VISIBILITY_TIMEOUT_SECONDS >= 6 * config.WORKER_TIMEOUT_SECONDS
    assert config.MAX_RECEIVE_COUNT >= config.MAX_ATTEMPTS_LIMIT + 5
