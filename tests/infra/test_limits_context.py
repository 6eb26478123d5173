"""CDK context for flow control: `jobLimits`, `sesPerSecond`, `webhookHostConcurrency`, checked at synth
and handed to the functions as JOB_LIMITS."""

import json

import pytest

from infra.job_types import JobTypeCatalog, JobTypesError
from infra.settings import Settings
from lambdas import config
from tests.infra.cfn import function


def _synth_env(context: dict[str, str]) -> dict[str, str]:
    from infra.synth import synthesize

    _, worker = function(synthesize(context), "worker")
    env: dict[str, str] = worker["Properties"]["Environment"]["Variables"]
    return env


def test_the_builtin_limits_are_context_keys_and_job_limits_override_them() -> None:
    """Seen to fail with `limit_overrides`' webhook_delivery entry removed (the host limit could not be set)."""
    env = _synth_env(
        {
            "webhookHostConcurrency": "3",
            "sesPerSecond": "50",
            "jobLimits": json.dumps({"process_file": {"concurrency": 4, "key": "owner"}}),
        }
    )
    assert json.loads(env[config.ENV_JOB_LIMITS]) == {
        "send_email": {"perSecond": 50.0},
        "webhook_delivery": {"concurrency": 3},
        "process_file": {"concurrency": 4, "key": "owner"},
    }


@pytest.mark.parametrize(
    ("job_limits", "complaint"),
    [
        ({"send_email": {"concurency": 1}}, "jobLimits.send_email"),
        ({"send_email": {"concurrency": 0}}, "jobLimits.send_email"),
        ({"send_email": {"key": "payload."}}, "jobLimits.send_email"),
        ({"send_email": {"burst": 3, "perSecond": None}}, "jobLimits.send_email"),
    ],
)
def test_bad_job_limits_are_refused_at_synth(job_limits: dict[str, object], complaint: str) -> None:
    with pytest.raises(ValueError, match="invalid CDK context") as refused:
        Settings(job_limits=tuple((t, tuple(f.items())) for t, f in job_limits.items()))
    assert complaint in str(refused.value)


def test_without_context_each_built_in_limit_is_the_one_its_type_declares() -> None:
    """The defaults live in the types (`send_email.py`, `webhook_delivery.py`), not again in the stack:
    JOB_LIMITS names no type unless the context does. Seen to fail with `limit_overrides` writing
    `send_email`'s `perSecond` whether or not `sesPerSecond` was given."""
    assert Settings().limit_overrides == {}
    assert Settings(ses_per_second=50).limit_overrides == {"send_email": {"perSecond": 50}}


def test_job_limits_are_checked_over_what_each_type_declares() -> None:
    """`burst` alone is a valid override of send_email (its type declares `perSecond`) and not of a type
    without one. Seen to fail with `check_limited` checking each override over an empty limit."""
    catalog = JobTypeCatalog.load()
    catalog.check_limited({"send_email": {"burst": 3}})
    with pytest.raises(JobTypesError, match=r"jobLimits\.webhook_delivery: .*burst needs perSecond"):
        catalog.check_limited({"webhook_delivery": {"burst": 3}})
    with pytest.raises(JobTypesError, match="no job type 'nope'"):
        catalog.check_limited({"nope": {"concurrency": 1}})
