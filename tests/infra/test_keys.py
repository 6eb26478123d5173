"""API keys: one per client named in clientKeys and one operator key, all in the usage plan; the api
function knows which id is the operator's, and the stack outputs every key's id."""

from typing import Any

import pytest
from aws_cdk import App

from infra.settings import Settings
from lambdas import config
from tests.infra.cfn import function, render, resources
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")


def _from(context: dict[str, Any]) -> Settings:
    return Settings.from_context(App(context=context).node)


def _keys(template: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(name, role) -> logical id, from each key's tags."""
    found = {}
    for logical_id, key in resources(template, "AWS::ApiGateway::ApiKey").items():
        tags = {tag["Key"]: tag["Value"] for tag in key["Properties"]["Tags"]}
        assert key["Properties"]["Enabled"] is True
        found[(tags[config.KEY_NAME_TAG], tags[config.KEY_ROLE_TAG])] = logical_id
    return found


def test_by_default_one_client_key_and_the_operator_key(template: dict[str, Any]) -> None:
    assert set(_keys(template)) == {("default", "client"), ("operator", "operator")}


def test_one_key_per_named_client(custom_template: dict[str, Any]) -> None:
    names = CUSTOM_CONTEXT["clientKeys"].split(",")
    assert set(_keys(custom_template)) == {*((name, "client") for name in names), ("operator", "operator")}


def test_every_key_is_in_the_usage_plan(custom_template: dict[str, Any]) -> None:
    (plan_id,) = resources(custom_template, "AWS::ApiGateway::UsagePlan")
    planned = {
        render(plan_key["Properties"]["KeyId"])
        for plan_key in resources(custom_template, "AWS::ApiGateway::UsagePlanKey").values()
        if plan_key["Properties"]["UsagePlanId"] == {"Ref": plan_id}
    }
    assert planned == {f"Ref({logical_id})" for logical_id in _keys(custom_template).values()}


def test_the_api_function_gets_the_operator_keys_id_and_no_other_function_does(
    template: dict[str, Any],
) -> None:
    operator = _keys(template)[("operator", "operator")]
    _, api = function(template, "api")
    assert api["Properties"]["Environment"]["Variables"][config.ENV_OPERATOR_KEY_ID] == {"Ref": operator}
    for entry_point in ("worker", "dead_letter", "recovery"):
        _, other = function(template, entry_point)
        assert config.ENV_OPERATOR_KEY_ID not in other["Properties"]["Environment"]["Variables"]


def test_outputs_name_each_key_id(custom_template: dict[str, Any]) -> None:
    keys = _keys(custom_template)
    outputs = {name: render(output["Value"]) for name, output in custom_template["Outputs"].items()}
    assert outputs["OperatorKeyId"] == f"Ref({keys[('operator', 'operator')]})"
    assert outputs["ApiKeyIdAlpha"] == f"Ref({keys[('alpha', 'client')]})"
    assert outputs["ApiKeyIdBetaTeam"] == f"Ref({keys[('beta_team', 'client')]})"
    # The first client's id under the one-key stack's name, for clients that read ApiKeyId.
    assert outputs["ApiKeyId"] == outputs["ApiKeyIdAlpha"]


@pytest.mark.parametrize(
    ("names", "complaint"),
    [
        (",", "'' is not 1..64 letters"),
        ("alpha,alpha", "'alpha' and 'alpha' name the same key"),
        ("my-app,my_app", "'my-app' and 'my_app' name the same key"),
        ("alpha,Alpha", "'alpha' and 'Alpha' name the same key"),
        ("a b", "'a b' is not 1..64 letters"),
        ("x" * 65, "is not 1..64 letters"),
        ("ops,Operator", "'Operator' is the operator key's name"),
        ([], "clientKeys needs at least one name"),
    ],
)
def test_invalid_client_keys_fail_synth(names: Any, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        _from({"clientKeys": names})


def test_client_keys_are_read_from_a_string_or_a_list() -> None:
    assert _from({"clientKeys": " alpha , beta "}).client_keys == ("alpha", "beta")
    assert _from({"clientKeys": ["a-1", "B_2"]}).client_keys == ("a-1", "B_2")
    assert Settings().client_keys == config.CLIENT_KEYS
