"""IAM callers (CDK context auth=iam): every data route is AWS_IAM, the console's pages are not, only
the mapped roles get past the resource policy, the api function knows the mapping; and in the default
mode nothing of it appears."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra.api import ROUTES
from infra.settings import Settings
from infra.synth import SKIP_BUNDLING, build_app
from lambdas import config
from lambdas.models.iam import IamCallers
from tests.infra.cfn import function, only, resources
from tests.infra.conftest import IAM_CONTEXT
from tests.infra.test_nag import _findings

pytestmark = pytest.mark.xdist_group("infra-template")

ROLES = [*IAM_CONTEXT["iamClients"].values(), IAM_CONTEXT["iamOperators"]]


def _methods(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> the method's properties, the path rebuilt from the resources' PathParts."""
    parts = {
        logical_id: (r["Properties"]["ParentId"], r["Properties"]["PathPart"])
        for logical_id, r in resources(template, "AWS::ApiGateway::Resource").items()
    }

    def path(resource_id: Any) -> str:
        logical_id = resource_id.get("Ref") if isinstance(resource_id, dict) else None
        if logical_id not in parts:
            return ""
        parent, part = parts[logical_id]
        return f"{path(parent)}/{part}"

    return {
        (m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"]) or "/"): m["Properties"]
        for m in resources(template, "AWS::ApiGateway::Method").values()
    }


def _console(methods: dict[tuple[str, str], Any]) -> list[tuple[str, str]]:
    return [route for route in methods if route[1].startswith("/console")]


def test_every_route_is_aws_iam_and_the_console_pages_are_not(iam_template: dict[str, Any]) -> None:
    """Seen to fail with the IAM authorization type left off the routes (NONE)."""
    methods = _methods(iam_template)
    for route in ROUTES:
        assert methods[route]["AuthorizationType"] == "AWS_IAM", route
        assert not methods[route].get("ApiKeyRequired"), route
    assert len(_console(methods)) == 2
    for route in _console(methods):
        assert methods[route]["AuthorizationType"] == "NONE", route


_PATH_PARAMETER = re.compile(r"{\w+}")


def test_only_the_mapped_roles_pass_the_resource_policy(iam_template: dict[str, Any]) -> None:
    """An explicit deny for any other principal on every route (an identity policy cannot let one in),
    an allow for the mapped roles, and the console's pages open. Seen to fail with the deny dropped."""
    _, api = only(iam_template, "AWS::ApiGateway::RestApi")
    statements = api["Properties"]["Policy"]["Statement"]
    routes = sorted(f"execute-api:/*/{m}/{_PATH_PARAMETER.sub('*', p.strip('/'))}" for m, p in ROUTES)
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Principal"] == {"AWS": "*"}
    assert deny["Action"] == "execute-api:Invoke"
    assert sorted(deny["Resource"]) == routes
    assert sorted(deny["Condition"]["StringNotEquals"]["aws:PrincipalArn"]) == sorted(ROLES)
    (mapped,) = [s for s in statements if s["Effect"] == "Allow" and s["Principal"]["AWS"] != "*"]
    assert sorted(mapped["Principal"]["AWS"]) == sorted(ROLES)
    assert sorted(mapped["Resource"]) == routes
    (anyone,) = [s for s in statements if s["Effect"] == "Allow" and s["Principal"]["AWS"] == "*"]
    assert anyone["Resource"] == ["execute-api:/*/GET/console", "execute-api:/*/GET/console/*"]


def test_no_api_keys_and_the_api_function_gets_the_mapping(iam_template: dict[str, Any]) -> None:
    """Seen to fail with the keys made in both modes (the operator key's id then reaches the function)."""
    assert not resources(iam_template, "AWS::ApiGateway::ApiKey")
    assert not resources(iam_template, "AWS::ApiGateway::UsagePlan")
    assert not [name for name in iam_template["Outputs"] if "KeyId" in name]
    _, api = function(iam_template, "api")
    variables = api["Properties"]["Environment"]["Variables"]
    assert config.ENV_OPERATOR_KEY_ID not in variables
    callers = IamCallers.model_validate_json(variables[config.ENV_IAM_CALLERS])
    assert callers.clients == IAM_CONTEXT["iamClients"]
    assert callers.operators == (IAM_CONTEXT["iamOperators"],)
    for entry_point in ("worker", "dead_letter", "recovery"):
        _, other = function(iam_template, entry_point)
        assert config.ENV_IAM_CALLERS not in other["Properties"]["Environment"]["Variables"]


def test_signature_refusals_are_403_in_the_apis_error_shape(iam_template: dict[str, Any]) -> None:
    """A bad or stale signature and a missing one (which API Gateway reports as a missing token, as it
    does an unknown route) are 403 `forbidden`. Seen to fail with MISSING_AUTHENTICATION_TOKEN left 404."""
    answers = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in resources(iam_template, "AWS::ApiGateway::GatewayResponse").values()
    }
    for response_type in (
        "INVALID_SIGNATURE",
        "EXPIRED_TOKEN",
        "MISSING_AUTHENTICATION_TOKEN",
        "ACCESS_DENIED",
    ):
        assert answers[response_type]["StatusCode"] == "403", response_type
        assert '"code": "forbidden"' in answers[response_type]["ResponseTemplates"]["application/json"]


def test_the_api_functions_role_is_the_same_in_both_modes(
    template: dict[str, Any], iam_template: dict[str, Any]
) -> None:
    """Least privilege: IAM callers add nothing to any function's role (the function only reads the
    request context). Seen to fail with an execute-api grant added to the api role."""
    for mode in (template, iam_template):
        assert {
            json.dumps(p["Properties"]["PolicyDocument"], sort_keys=True)
            for p in resources(mode, "AWS::IAM::Policy").values()
        } == {
            json.dumps(p["Properties"]["PolicyDocument"], sort_keys=True)
            for p in resources(template, "AWS::IAM::Policy").values()
        }


def test_the_default_mode_has_api_keys_and_no_iam(template: dict[str, Any]) -> None:
    """Seen to fail with AWS_IAM on the routes in both modes."""
    methods = _methods(template)
    for route in ROUTES:
        assert methods[route]["AuthorizationType"] == "NONE", route
        assert methods[route]["ApiKeyRequired"] is True, route
    _, api = only(template, "AWS::ApiGateway::RestApi")
    assert "Policy" not in api["Properties"]
    assert api["Properties"]["ApiKeySourceType"] == "HEADER"
    _, function_ = function(template, "api")
    assert config.ENV_IAM_CALLERS not in function_["Properties"]["Environment"]["Variables"]
    types = {
        r["Properties"]["ResponseType"]
        for r in resources(template, "AWS::ApiGateway::GatewayResponse").values()
    }
    assert not {"INVALID_SIGNATURE", "EXPIRED_TOKEN"} & types


def test_auth_api_key_is_the_default() -> None:
    """Both synthesized here: the session's template is shared with tests that patch it."""
    from infra.synth import synthesize

    assert synthesize({"auth": "apiKey"}) == synthesize()


def test_cdk_nag_is_clean_in_iam_mode(tmp_path: Path) -> None:
    """Seen to fail with the APIG3 acknowledgment's rule misspelt."""
    app, _ = build_app({**SKIP_BUNDLING, **IAM_CONTEXT}, outdir=str(tmp_path), checks=True)
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert list(_findings(report)) == []


def _from(context: dict[str, Any]) -> Settings:
    return Settings.from_context(App(context=context).node)


@pytest.mark.parametrize(
    ("context", "complaint"),
    [
        ({"auth": "iam"}, "auth=iam needs iamClients"),
        ({"auth": "oauth"}, "expected one of apiKey, iam"),
        ({"iamClients": "a=arn:aws:iam::111122223333:role/a"}, "need auth=iam"),
        ({"auth": "iam", "iamClients": "a=arn:aws:iam::1:role/a"}, "not IAM role ARNs"),
        ({"auth": "iam", "iamClients": "a"}, "expected name=roleArn"),
        ({"auth": "iam", "iamClients": "a b=arn:aws:iam::111122223333:role/a"}, "is not 1..64 letters"),
        ({"auth": "iam", "iamClients": "operator=arn:aws:iam::111122223333:role/a"}, "the operators' name"),
        (
            {
                "auth": "iam",
                "iamClients": "a=arn:aws:iam::111122223333:role/x",
                "iamOperators": "arn:aws:iam::111122223333:role/team/x",
            },
            "a role is mapped more than once",
        ),
    ],
)
def test_invalid_iam_context_fails_synth(context: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        _from(context)


def test_iam_clients_are_read_from_a_string_or_a_mapping() -> None:
    text = _from(
        {
            "auth": "iam",
            "iamClients": "a=arn:aws:iam::111122223333:role/a, b=arn:aws:iam::111122223333:role/b",
        }
    )
    mapping = _from(
        {
            "auth": "iam",
            "iamClients": {"a": "arn:aws:iam::111122223333:role/a", "b": "arn:aws:iam::111122223333:role/b"},
        }
    )
    assert (
        text.iam_clients
        == mapping.iam_clients
        == (
            ("a", "arn:aws:iam::111122223333:role/a"),
            ("b", "arn:aws:iam::111122223333:role/b"),
        )
    )
