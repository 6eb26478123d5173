"""Each function's environment is validated when it starts: no silent defaults for resource names."""

import subprocess
import sys
from pathlib import Path

import pytest

from lambdas import config
from lambdas.models import settings
from lambdas.models.settings import (
    ApiSettings,
    DeadLetterSettings,
    Environment,
    RecoverySettings,
    SettingsError,
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
    with pytest.raises(SettingsError, match=config.ENV_JOBS_TABLE):
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
    with pytest.raises(SettingsError, match=name):
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
    with pytest.raises(SettingsError, match=name):
        WorkerSettings.load({**WORKER_ENVIRONMENT, name: value})


def test_a_nonsense_tunable_is_refused() -> None:
    with pytest.raises(SettingsError):
        RecoverySettings.load(
            {
                config.ENV_JOBS_TABLE: "jobs",
                config.ENV_QUEUE_URL: "q",
                config.ENV_DEAD_LETTER_QUEUE_URLS: '{"q": "dlq"}',
                config.ENV_RECOVERY_GRACE_SECONDS: "-1",
            }
        )


@pytest.mark.parametrize("model", FUNCTION_SETTINGS)
def test_every_setting_is_read_from_an_environment_name_of_the_shared_config(
    model: type[Environment],
) -> None:
    # The stack builds each function's environment from these aliases, so they must be the contract's names.
    names = {value for key, value in vars(config).items() if key.startswith("ENV_")}
    for variable in model.variables():
        assert variable.name in names, f"{model.__name__} reads {variable.name!r}"


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
    assert config.VISIBILITY_TIMEOUT_FACTOR >= 6
    assert config.MAX_RECEIVE_COUNT >= config.MAX_ATTEMPTS_LIMIT + 5


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("false", False),
        ("0", False),
        ("off", False),
    ],
)
def test_a_flag_is_read_as_the_stack_and_people_write_it(text: str, read: bool) -> None:
    worker = WorkerSettings.load({**WORKER_ENVIRONMENT, config.ENV_ALLOW_HTTP_WEBHOOKS: text})
    assert worker.allow_http_webhooks is read


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        (config.ENV_ALLOW_HTTP_WEBHOOKS, "maybe", "not a boolean"),
        (config.ENV_BACKOFF_BASE_SECONDS, "nan", "not a finite number"),
        (config.ENV_BACKOFF_CAP_SECONDS, "inf", "not a finite number"),
        (config.ENV_LEASE_SECONDS, "1.5", "not a whole number"),
        (config.ENV_JOB_QUEUE_URLS, '{"crm": 1}', "'crm' is not a string"),
        (config.ENV_JOB_SETTINGS, '["crm"]', "not a JSON object"),
        (config.ENV_JOB_SECRETS, "{", "not JSON"),
        (config.ENV_JOB_LIMITS, '{"send_email": {"concurrency": 0}}', "concurrency"),
        (config.ENV_RETRY_POLICIES, '{"send_email": {"windowSeconds": 0}}', "windowSeconds must be"),
        (config.ENV_SENDER_EMAIL, "ab", "at least 3 characters"),
    ],
)
def test_a_value_its_setting_cannot_read_stops_the_function_naming_the_variable_and_why(
    name: str, value: str, why: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        WorkerSettings.load({**WORKER_ENVIRONMENT, name: value})
    assert [n for n, _ in refused.value.problems] == [name]
    assert why in refused.value.problems[0][1]


def test_every_problem_of_an_environment_is_reported_at_once() -> None:
    environment = {**WORKER_ENVIRONMENT, config.ENV_LEASE_SECONDS: "0", config.ENV_WORKER_CONCURRENCY: "x"}
    del environment[config.ENV_QUEUE_URL]
    with pytest.raises(SettingsError) as refused:
        WorkerSettings.load(environment)
    assert {n for n, _ in refused.value.problems} == {
        config.ENV_QUEUE_URL,
        config.ENV_LEASE_SECONDS,
        config.ENV_WORKER_CONCURRENCY,
    }


API_ENVIRONMENT = {
    **{k: v for k, v in WORKER_ENVIRONMENT.items() if k != config.ENV_SENDER_EMAIL},
    config.ENV_SCHEDULES_TABLE: "schedules",
}
IAM_CALLERS = '{"clients": {"acme": "arn:aws:iam::123456789012:role/acme"}}'


@pytest.mark.parametrize(
    "callers",
    [{}, {config.ENV_OPERATOR_KEY_ID: "op1d", config.ENV_IAM_CALLERS: IAM_CALLERS}],
    ids=["neither", "both"],
)
def test_the_api_takes_exactly_one_way_in(callers: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match=f"set one of {config.ENV_OPERATOR_KEY_ID} and"):
        ApiSettings.load({**API_ENVIRONMENT, **callers})


def test_the_api_reads_its_iam_callers_and_refuses_a_role_that_is_not_one() -> None:
    api = ApiSettings.load({**API_ENVIRONMENT, config.ENV_IAM_CALLERS: IAM_CALLERS})
    assert api.iam_callers is not None
    assert api.operator_key_id is None
    assert api.iam_callers.clients == {"acme": "arn:aws:iam::123456789012:role/acme"}
    with pytest.raises(SettingsError, match="not IAM role ARNs"):
        ApiSettings.load({**API_ENVIRONMENT, config.ENV_IAM_CALLERS: '{"clients": {"acme": "nobody"}}'})


def test_settings_once_read_do_not_change() -> None:
    worker = WorkerSettings.load(WORKER_ENVIRONMENT)
    with pytest.raises(AttributeError, match="frozen"):
        worker.lease_seconds = 1  # type: ignore[misc]
