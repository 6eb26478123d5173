"""A user's package of job types registers as the built-in one does, and a type gets what it declared."""

import json

import pytest
from pydantic import BaseModel

from lambdas.jobs import registry
from lambdas.jobs.base import JobType, PermanentJobError, SecretNotDeclaredError
from lambdas.jobs.packages import JobTypeClashError, register_job_types
from lambdas.lifecycle.attempt.type_config import TypeConfig, TypeSettingsError
from lambdas.models.settings import JobTypesSettings
from tests.support.user_package import SYNC_CRM, write_package


@pytest.fixture
def crm_package(tmp_path, monkeypatch):
    package = write_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package.name
    registry.unregister("sync_crm")


def test_a_users_package_registers_beside_the_builtin_types(crm_package):
    """Seen to fail with `register_job_types` registering the built-in package only."""
    register_job_types([crm_package])
    assert registry.get("sync_crm").secrets == ("crm_token",)
    assert registry.get("send_email").name == "send_email"


def test_a_type_named_like_a_builtin_one_is_refused_at_start(tmp_path, monkeypatch):
    package = write_package(tmp_path, {"send_email": SYNC_CRM.replace('"sync_crm"', '"send_email"')})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(JobTypeClashError, match=f"'send_email' of {package.name}"):
        register_job_types([package.name])


def test_a_type_named_like_the_lifecycles_ops_job_is_refused_at_start(tmp_path, monkeypatch):
    """A function (and so `make run` with a template already synthesized) refuses it as synth does. Seen
    to fail with `RESERVED` emptied."""
    package = write_package(tmp_path, {"bulk_action": SYNC_CRM.replace('"sync_crm"', '"bulk_action"')})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        JobTypeClashError, match=f"'bulk_action' of {package.name} has the name of offload's own"
    ):
        register_job_types([package.name])
    assert "bulk_action" not in registry.names()


def _config(job_settings, job_secrets=None, read=None):
    environ = {
        "JOB_SETTINGS": json.dumps(job_settings),
        "JOB_SECRETS": json.dumps(job_secrets or {}),
    }
    return TypeConfig(JobTypesSettings.load(environ), read)


def test_a_types_settings_are_validated_when_the_worker_starts(crm_package):
    """Seen to fail with `settings_for` not validating (the raw mapping handed over, the bad URL kept)."""
    register_job_types([crm_package])
    with pytest.raises(TypeSettingsError, match="sync_crm"):
        _config({"sync_crm": {"crmUrl": "ftp://nope"}}).check()
    good = _config({"sync_crm": {"crmUrl": "https://crm.example.com"}})
    good.check()
    assert good.settings_for(registry.get("sync_crm")).crm_url == "https://crm.example.com"


def test_a_job_reads_only_the_secrets_its_type_declared(crm_package):
    """Seen to fail with the `declared` check removed from `_secret` (another type's secret read)."""
    register_job_types([crm_package])
    reads = []
    config = _config(
        {},
        {"sync_crm": {"crm_token": "arn:token", "other": "arn:other"}, "send_email": {"crm_token": "arn:x"}},
        lambda arn: reads.append(arn) or "v",
    )
    secret = config.secret_reader(registry.get("sync_crm"))
    assert secret("crm_token") == "v"
    with pytest.raises(SecretNotDeclaredError, match="declares no secret 'other'"):
        secret("other")
    with pytest.raises(SecretNotDeclaredError):
        config.secret_reader(registry.get("send_email"))("crm_token")
    assert reads == ["arn:token"]


def test_a_declared_secret_the_function_was_not_given_fails_the_job_naming_it(crm_package):
    """A worker built from another template has no ARN for a name the type declares: the job fails
    for good, its `lastError` naming the secret and the type. Seen to fail against `_secret`'s
    `PermanentJobError(f"secret {name!r} ...")` as `(None)` (sample 581628's
    `xǁTypeConfigǁ_secret__mutmut_6`)."""
    register_job_types([crm_package])
    secret = _config({}, {}, lambda arn: "v").secret_reader(registry.get("sync_crm"))
    with pytest.raises(PermanentJobError) as failed:
        secret("crm_token")
    assert str(failed.value) == "secret 'crm_token' of job type 'sync_crm' is not in this function"


def test_two_types_declaring_one_name_each_read_their_own_secret():
    """Seen to fail with `_secret` looking the name up across types (`left` reading `right`'s ARN)."""
    left, right = (
        JobType(name, BaseModel, lambda p, c: None, secrets=("a_token",)) for name in ("left", "right")
    )
    reads: list[str] = []
    config = _config(
        {},
        {"left": {"a_token": "arn:left"}, "right": {"a_token": "arn:right"}},
        lambda arn: reads.append(arn) or arn,
    )
    assert config.secret_reader(left)("a_token") == "arn:left"
    assert config.secret_reader(right)("a_token") == "arn:right"
    assert reads == ["arn:left", "arn:right"]
