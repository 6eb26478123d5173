"""Each function's environment is validated when it starts: no silent defaults for resource names."""

import pytest
from pydantic import ValidationError

from lambdas import config
from lambdas.models.settings import ApiSettings, RecoverySettings, WorkerSettings


def test_a_missing_table_name_is_an_error_not_a_default() -> None:
    with pytest.raises(ValidationError, match=config.ENV_JOBS_TABLE):
        ApiSettings.load({config.ENV_QUEUE_URL: "https://sqs/q"})


def test_tunables_take_their_documented_defaults() -> None:
    settings = WorkerSettings.load(
        {config.ENV_JOBS_TABLE: "jobs", config.ENV_QUEUE_URL: "q", config.ENV_DLQ_URL: "dlq"}
    )
    assert settings.backoff_base_seconds == config.BACKOFF_BASE_SECONDS
    assert settings.backoff_cap_seconds == config.BACKOFF_CAP_SECONDS
    assert settings.lease_seconds == config.LEASE_SECONDS


def test_a_nonsense_tunable_is_refused() -> None:
    with pytest.raises(ValidationError):
        RecoverySettings.load(
            {
                config.ENV_JOBS_TABLE: "jobs",
                config.ENV_QUEUE_URL: "q",
                config.ENV_RECOVERY_GRACE_SECONDS: "-1",
            }
        )


def test_the_lease_outlives_the_worker_and_the_queue_hides_messages_long_enough() -> None:
    assert config.LEASE_SECONDS > config.WORKER_TIMEOUT_SECONDS
    assert config.VISIBILITY_TIMEOUT_SECONDS >= 6 * config.WORKER_TIMEOUT_SECONDS
    assert config.MAX_RECEIVE_COUNT >= config.MAX_ATTEMPTS_LIMIT + 5
