"""CDK context `retryPolicies`: checked at synth (known types, known fields, a valid policy over what the
type declares) and handed to the API and every worker as RETRY_POLICIES, which the local runtime's
functions get from the template as deployed ones do."""

import json

import pytest
from moto import mock_aws

from infra.job_types import JobTypeCatalog, JobTypesError
from infra.settings import Settings
from lambdas import config
from local_runtime.template import provision
from tests.infra.cfn import function

OVERRIDE = {"send_email": {"attempts": 30, "windowSeconds": 5 * 86_400}}


def test_an_override_reaches_the_api_and_the_worker_in_aws_and_in_the_local_runtime() -> None:
    """Broken line: `stack_environment`'s RETRY_POLICIES entry removed (no function learns the override)."""
    from infra.synth import synthesize

    template = synthesize({"retryPolicies": json.dumps(OVERRIDE)})

    for entry_point in ("api", "worker"):
        _, found = function(template, entry_point)
        env = found["Properties"]["Environment"]["Variables"]
        assert json.loads(env[config.ENV_RETRY_POLICIES]) == OVERRIDE, entry_point
    with mock_aws():
        local = provision(template).function_env("lambdas.handlers.worker.handler")
    assert json.loads(local[config.ENV_RETRY_POLICIES]) == OVERRIDE


@pytest.mark.parametrize(
    ("policies", "complaint"),
    [
        ({"send_email": {"atempts": 3}}, "retryPolicies.send_email: unknown field atempts"),
        ({"send_email": {"attempts": 0}}, "retryPolicies.send_email: attempts must be 1..50"),
        ({"send_email": {"windowSeconds": 8 * 86_400}}, "windowSeconds must be 1..604800"),
        ({"send_email": {"attempts": "many"}}, "attempts must be a number"),
        ({"send_email": {"backoffBaseSeconds": 60, "backoffCapSeconds": 30}}, "backoffCapSeconds must be"),
    ],
)
def test_bad_retry_policies_are_refused_at_synth(
    policies: dict[str, dict[str, object]], complaint: str
) -> None:
    """Broken line: `_retry_problems`' `yield str(error)` as `pass` (any override is accepted)."""
    with pytest.raises(ValueError, match="invalid CDK context") as refused:
        Settings(retry_policies=tuple((t, tuple(f.items())) for t, f in policies.items()))
    assert complaint in str(refused.value)


def test_an_override_must_name_a_known_type_and_fit_the_types_own_policy() -> None:
    """send_email's cap is 6 hours: a base of 7 hours over it is refused, naming the field. Broken line:
    `check_retry_policies`' `declared[name].overridden(...)` as `RetryPolicy().overridden(...)`."""
    catalog = JobTypeCatalog.load()
    with pytest.raises(JobTypesError, match="retryPolicies: no job type 'send_mail'"):
        catalog.check_retry_policies({"send_mail": {"attempts": 3}})
    with pytest.raises(JobTypesError, match=r"retryPolicies\.send_email: backoffCapSeconds must be"):
        catalog.check_retry_policies({"send_email": {"backoffBaseSeconds": 7 * 3600}})
    catalog.check_retry_policies(OVERRIDE)
