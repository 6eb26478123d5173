"""CDK context: parsed from the CLI's strings, checked before anything is built."""

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Annotations, Match, Template

from infra.bundling import REPO_ROOT
from infra.settings import CONTEXT_KEYS, PLACEHOLDER_SENDER, Settings
from infra.synth import SKIP_BUNDLING, build_app
from lambdas import config
from lambdas.models.settings import (
    ApiSettings,
    DeadLetterSettings,
    Environment,
    FiringSettings,
    RecoverySettings,
    SettingsError,
    WorkerSettings,
)
from tests.infra.cfn import concrete

# Each function's settings model, by the handler that loads it.
MODELS: dict[str, type[Environment]] = {
    "lambdas.handlers.api.handler": ApiSettings,
    "lambdas.handlers.worker.handler": WorkerSettings,
    "lambdas.handlers.dead_letter.handler": DeadLetterSettings,
    "lambdas.handlers.recovery.handler": RecoverySettings,
    "lambdas.handlers.schedules.handler": FiringSettings,
}
# Every bound that synth checks and the functions check again at start, at its edge.
AT_THE_BOUNDS: dict[str, Any] = {
    "thumbnailSizes": f"{config.MIN_THUMBNAIL_PIXELS},{config.MAX_THUMBNAIL_PIXELS}",
    "backoffBaseSeconds": config.MIN_BACKOFF_SECONDS,
    "backoffCapSeconds": config.SQS_MAX_VISIBILITY_SECONDS,
    "statusShards": config.MAX_STATUS_SHARDS,
}


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
        ("thumbnailSizes", "8", "thumbnailSizes"),  # every process_file job would fail its settings check
        ("thumbnailSizes", "128,4097", "thumbnailSizes"),
        ("backoffBaseSeconds", 0, "backoffBaseSeconds must be"),
        ("backoffCapSeconds", 43_201, "backoffCapSeconds must be"),
        ("localRuntime", "maybe", "localRuntime"),
        ("thumbnailSizes", "", None),  # empty means "not set": the default applies
        ("allowHttpWebhooks", "maybe", "allowHttpWebhooks"),
        ("senderEmail", "not-an-address", "senderEmail"),
        ("alertEmail", "ops@", "alertEmail"),
        ("apiRateLimit", 0, "apiRateLimit must be"),
        ("apiQuotaPerDay", 1.5, "apiQuotaPerDay"),
        ("statusShards", 0, "statusShards must be"),
        ("statusShards", config.MAX_STATUS_SHARDS + 1, "statusShards must be"),
        ("snapStart", "api,everything", "snapStart"),
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


def _synth(context: dict[str, Any], outdir: Path) -> tuple[dict[str, Any], Stack]:
    # The stack stays queryable (Annotations synthesizes into `outdir` again), so `outdir` must outlive it.
    _, stack = build_app({**context, **SKIP_BUNDLING}, outdir=str(outdir), checks=False)
    return Template.from_stack(stack).to_json(), stack


@pytest.fixture(scope="module")
def at_the_bounds(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Stack]:
    return _synth({**AT_THE_BOUNDS, "localRuntime": True}, tmp_path_factory.mktemp("bounds"))


def _environments(template: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each function's environment, with what CloudFormation resolves at deploy time made concrete."""
    found = {}
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            variables = resource["Properties"]["Environment"]["Variables"]
            found[resource["Properties"]["Handler"]] = {
                name: concrete(name, value) for name, value in variables.items()
            }
    return found


def test_every_function_starts_with_the_environment_synth_gives_it(template: dict[str, Any]) -> None:
    environments = _environments(template)
    assert set(environments) == set(MODELS)
    for handler, model in MODELS.items():
        model.load(environments[handler])


def test_a_value_synth_accepts_at_a_bound_is_accepted_at_run_time(
    at_the_bounds: tuple[dict[str, Any], Stack],
) -> None:
    template, _ = at_the_bounds
    worker = WorkerSettings.load(_environments(template)["lambdas.handlers.worker.handler"])
    assert worker.thumbnail_sizes == (config.MAX_THUMBNAIL_PIXELS, config.MIN_THUMBNAIL_PIXELS)
    assert worker.backoff_base_seconds == config.MIN_BACKOFF_SECONDS
    assert worker.backoff_cap_seconds == config.SQS_MAX_VISIBILITY_SECONDS
    assert worker.status_shards == config.MAX_STATUS_SHARDS


@pytest.mark.parametrize(
    ("key", "beyond", "env_name"),
    [
        ("thumbnailSizes", config.MIN_THUMBNAIL_PIXELS - 1, config.ENV_THUMBNAIL_SIZES),
        ("thumbnailSizes", config.MAX_THUMBNAIL_PIXELS + 1, config.ENV_THUMBNAIL_SIZES),
        ("backoffBaseSeconds", config.MIN_BACKOFF_SECONDS - 1, config.ENV_BACKOFF_BASE_SECONDS),
        ("backoffCapSeconds", config.SQS_MAX_VISIBILITY_SECONDS + 1, config.ENV_BACKOFF_CAP_SECONDS),
        ("statusShards", config.MAX_STATUS_SHARDS + 1, config.ENV_STATUS_SHARDS),
    ],
)
def test_a_value_beyond_a_bound_is_refused_by_synth_and_at_run_time(
    at_the_bounds: tuple[dict[str, Any], Stack], key: str, beyond: int, env_name: str
) -> None:
    template, _ = at_the_bounds
    with pytest.raises(ValueError, match=key):
        _from({**AT_THE_BOUNDS, key: beyond})
    environment = _environments(template)["lambdas.handlers.worker.handler"]
    with pytest.raises(SettingsError, match=env_name):
        WorkerSettings.load({**environment, env_name: str(beyond)})


def test_the_placeholder_sender_warns_for_aws_only() -> None:
    assert list(_from({}).warnings()) == ["offload:placeholderSenderEmail"]
    assert _from({"localRuntime": "true"}).warnings() == {}
    assert _from({"senderEmail": "jobs@mail.example.org"}).warnings() == {}


def test_synth_shows_the_sender_warning_for_aws_and_not_for_the_local_runtime(
    at_the_bounds: tuple[dict[str, Any], Stack], tmp_path: Path
) -> None:
    placeholder = Match.string_like_regexp("senderEmail is the placeholder")
    _, local = at_the_bounds
    assert Annotations.from_stack(local).find_warning("*", placeholder) == []
    _, for_aws = _synth({}, tmp_path)
    assert len(Annotations.from_stack(for_aws).find_warning("*", placeholder)) == 1


def test_the_upgrade_list_names_known_clients_and_warns_while_set() -> None:
    """`true` handed the stack-wide secret to clients onboarded later: refused, naming what to give.
    Seen to fail with `_shared_clients` reading `true` as every client, and with the warning left out."""
    with pytest.raises(ValueError, match="name the clients that existed before the upgrade"):
        _from({"webhookSecretsStartShared": "true"})
    assert _from({"webhookSecretsStartShared": "false"}).webhook_secrets_start_shared == ()
    upgraded = _from({"clientKeys": "alpha,beta", "webhookSecretsStartShared": "alpha"})
    assert upgraded.webhook_secrets_start_shared == ("alpha",)
    assert "alpha start with the stack-wide" in upgraded.warnings()["offload:webhookSecretsStartShared"]
    with pytest.raises(ValueError, match=r"webhookSecretsStartShared: no client 'gamma' \(clients: alpha\)"):
        _from({"clientKeys": "alpha", "webhookSecretsStartShared": "gamma"})
