"""The local runtime's API keys are the template's: one per ApiKey resource, with its id, name and role."""

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from lambdas import config
from local_runtime.__main__ import parse_args
from local_runtime.runtime import local_keys, local_template
from local_runtime.template import Provisioned, UnsupportedTemplateError, provision


@pytest.fixture(scope="module")
def two_clients() -> dict[str, Any]:
    # What `python -m local_runtime -c clientKeys=alpha,beta` synthesizes.
    return local_template(parse_args(["-c", "clientKeys=alpha,beta"]).context)


@pytest.fixture
def provisioned(two_clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Provisioned]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield provision(two_clients)


def test_every_key_of_the_template_with_its_id_name_and_role(provisioned: Provisioned) -> None:
    found = [(key.name, key.role, key.id) for key in provisioned.api_keys]
    outputs = provisioned.outputs
    assert found == [
        ("alpha", "client", outputs["ApiKeyIdAlpha"]),
        ("beta", "client", outputs["ApiKeyIdBeta"]),
        ("operator", "operator", outputs["OperatorKeyId"]),
    ]
    # The id the api function compares callers with is the operator key's, as in AWS.
    env = provisioned.function_env("lambdas.handlers.api.handler")
    assert env[config.ENV_OPERATOR_KEY_ID] == outputs["OperatorKeyId"]


def test_the_first_client_key_takes_the_given_value_and_every_other_a_new_one(
    provisioned: Provisioned,
) -> None:
    keys = local_keys(provisioned.api_keys, "local-given")
    assert [(key.name, key.role) for key in keys] == [
        ("alpha", "client"),
        ("beta", "client"),
        ("operator", "operator"),
    ]
    assert keys[0].value == "local-given"
    assert len({key.value for key in keys}) == 3
    assert all(key.value.startswith("local-") and len(key.value) > 20 for key in keys[1:])
    assert [key.id for key in keys] == [spec.id for spec in provisioned.api_keys]


def test_a_disabled_key_opens_nothing_and_an_unknown_role_is_refused(
    two_clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    template = copy.deepcopy(two_clients)
    keys = {i: r for i, r in template["Resources"].items() if r["Type"] == "AWS::ApiGateway::ApiKey"}
    beta = next(i for i, r in keys.items() if "beta" in r["Properties"]["Description"])
    template["Resources"][beta]["Properties"]["Enabled"] = False
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        assert [key.name for key in provision(template).api_keys] == ["alpha", "operator"]
    for tag in template["Resources"][beta]["Properties"]["Tags"]:
        if tag["Key"] == config.KEY_ROLE_TAG:
            tag["Value"] = "admin"
    template["Resources"][beta]["Properties"]["Enabled"] = True
    with mock_aws(), pytest.raises(UnsupportedTemplateError, match="'admin' is not a key role"):
        provision(template)
