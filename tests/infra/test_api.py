"""The REST API as deployed: routes, API keys, the usage plan, validation, error shape, logging, tracing."""

import json
import re
from typing import Any

import pytest
from aws_cdk.assertions import Template

from infra.api import _GATEWAY_ERRORS
from lambdas import config
from lambdas.handlers.rest.security import SECURITY_HEADERS
from tests.infra.cfn import function, only, render, resources
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")


def _routes(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> method properties, the path rebuilt from the resources' parent links."""
    api_resources = resources(template, "AWS::ApiGateway::Resource")

    def path(ref: Any) -> str:
        if "Ref" not in ref:  # the root resource: Fn::GetAtt RestApi.RootResourceId
            return ""
        props = api_resources[ref["Ref"]]["Properties"]
        return f"{path(props['ParentId'])}/{props['PathPart']}"

    return {
        (m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"])): m["Properties"]
        for m in resources(template, "AWS::ApiGateway::Method").values()
    }


def _access_log_group(stage: dict[str, Any]) -> str:
    """The log group's logical id in the stage's destination ARN (`...:log-group:<name>`)."""
    match = re.fullmatch(
        r".*:log-group:Ref\((\w+)\)", render(stage["Properties"]["AccessLogSetting"]["DestinationArn"])
    )
    assert match, "access logs go to a log group of this stack"
    return match.group(1)


def test_the_routes_are_the_ones_the_openapi_document_describes(template: dict[str, Any]) -> None:
    from lambdas.handlers.api import openapi_document

    paths = json.loads(openapi_document())["paths"]
    documented = {(method.upper(), path) for path, methods in paths.items() for method in methods}
    # The console's page and files are not part of the API it documents (tests/infra/test_console.py).
    data_routes = {route for route in _routes(template) if not route[1].startswith("/console")}
    assert data_routes == documented


def test_the_openapi_documents_server_is_the_stage_the_stack_deploys(template: dict[str, Any]) -> None:
    """Seen to fail with the document's server URL `/`."""
    from lambdas.handlers.api import openapi_document

    _, stage = only(template, "AWS::ApiGateway::Stage")
    servers = json.loads(openapi_document())["servers"]
    assert servers[0]["url"] == f"/{stage['Properties']['StageName']}"
    assert servers[1]["url"].endswith(f".amazonaws.com/{stage['Properties']['StageName']}")


def test_every_route_proxies_to_the_api_function(template: dict[str, Any]) -> None:
    api_function, _ = function(template, "api")
    for method in _routes(template).values():
        integration = method["Integration"]
        assert integration["Type"] == "AWS_PROXY"
        assert integration["IntegrationHttpMethod"] == "POST"
        assert f"Arn({api_function})" in render(integration["Uri"])


def test_usage_plan_throttles_and_caps_the_key_on_the_stage(template: dict[str, Any]) -> None:
    _, plan = only(template, "AWS::ApiGateway::UsagePlan")
    stage_id, _ = only(template, "AWS::ApiGateway::Stage")
    plan_keys = resources(template, "AWS::ApiGateway::UsagePlanKey").values()

    props = plan["Properties"]
    assert props["Throttle"]["RateLimit"] > 0
    assert props["Throttle"]["BurstLimit"] >= props["Throttle"]["RateLimit"]
    assert props["Quota"]["Limit"] > 0
    assert props["Quota"]["Period"] == "DAY"
    assert [s["Stage"] for s in props["ApiStages"]] == [{"Ref": stage_id}]
    # Every key is in the plan (tests/infra/test_keys.py), each capped by it on its own.
    assert {render(k["Properties"]["KeyId"]) for k in plan_keys} == {
        f"Ref({key_id})" for key_id in resources(template, "AWS::ApiGateway::ApiKey")
    }
    assert all(k["Properties"]["KeyType"] == "API_KEY" for k in plan_keys)


def test_requests_are_validated_before_the_function_runs(template: dict[str, Any]) -> None:
    validator_id, validator = only(template, "AWS::ApiGateway::RequestValidator")
    assert validator["Properties"]["ValidateRequestBody"] is True
    assert validator["Properties"]["ValidateRequestParameters"] is True

    routes = _routes(template)
    assert all(method["RequestValidatorId"] == {"Ref": validator_id} for method in routes.values())
    for (_, path), method in routes.items():
        expected = {f"method.request.path.{name}": True for name in re.findall(r"{(\w+)}", path)} or None
        assert method.get("RequestParameters") == expected, path
    model_id, _ = only(template, "AWS::ApiGateway::Model")
    assert routes[("POST", "/jobs")]["RequestModels"] == {"application/json": {"Ref": model_id}}


def test_submit_job_model_matches_the_api_contract(template: dict[str, Any]) -> None:
    _, model = only(template, "AWS::ApiGateway::Model")
    assert model["Properties"]["ContentType"] == "application/json"
    schema = model["Properties"]["Schema"]
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["type"] == "object"
    assert sorted(schema["required"]) == ["payload", "type"]
    properties = schema["properties"]
    assert properties["type"]["type"] == "string"
    assert properties["payload"]["type"] == "object"
    assert properties["maxAttempts"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": config.MAX_POLICY_ATTEMPTS,  # a type's retry policy may allow up to this
    }
    assert properties["delaySeconds"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": config.MAX_DELAY_SECONDS,
    }
    assert "maxAttempts" not in schema["required"]
    assert "delaySeconds" not in schema["required"]


@pytest.mark.parametrize(
    ("response_type", "status", "code"),
    [
        ("BAD_REQUEST_BODY", "400", "invalid_request"),
        ("BAD_REQUEST_PARAMETERS", "400", "invalid_request"),
        ("INVALID_API_KEY", "403", "forbidden"),
        ("MISSING_AUTHENTICATION_TOKEN", "404", "not_found"),
        ("THROTTLED", "429", "throttled"),
        ("QUOTA_EXCEEDED", "429", "quota_exceeded"),
        ("REQUEST_TOO_LARGE", "413", "payload_too_large"),
        ("DEFAULT_4XX", None, "bad_request"),
        ("DEFAULT_5XX", None, "internal_error"),
    ],
)
def test_gateway_errors_have_the_projects_error_shape(
    template: dict[str, Any], response_type: str, status: str | None, code: str
) -> None:
    (response,) = [
        r["Properties"]
        for r in resources(template, "AWS::ApiGateway::GatewayResponse").values()
        if r["Properties"]["ResponseType"] == response_type
    ]
    assert response.get("StatusCode") == status
    body_template = response["ResponseTemplates"]["application/json"]
    # API Gateway substitutes messageString as a quoted JSON string, e.g. "Invalid request body".
    rendered = body_template.replace("$context.error.messageString", json.dumps('Invalid "request" body'))
    assert json.loads(rendered) == {"error": {"code": code, "message": 'Invalid "request" body'}}


def test_stage_traces_logs_and_throttles(template: dict[str, Any]) -> None:
    _, stage = only(template, "AWS::ApiGateway::Stage")
    props = stage["Properties"]
    assert props["TracingEnabled"] is True

    assert template["Resources"][_access_log_group(stage)]["Type"] == "AWS::Logs::LogGroup"
    access_log = json.loads(props["AccessLogSetting"]["Format"])
    assert access_log["requestId"] == "$context.requestId"
    assert access_log["status"] == "$context.status"
    assert access_log["apiKeyId"] == "$context.identity.apiKeyId"

    (settings,) = props["MethodSettings"]
    assert settings["HttpMethod"] == "*"
    assert settings["ResourcePath"] == "/*"
    assert settings["MetricsEnabled"] is True
    assert settings["ThrottlingRateLimit"] > 0
    assert settings["ThrottlingBurstLimit"] > 0


def test_access_log_group_has_retention(template: dict[str, Any]) -> None:
    _, stage = only(template, "AWS::ApiGateway::Stage")
    log_group = template["Resources"][_access_log_group(stage)]
    assert log_group["Properties"]["RetentionInDays"] == 30


def test_api_limits_come_from_context(custom_template: dict[str, Any]) -> None:
    _, plan = only(custom_template, "AWS::ApiGateway::UsagePlan")
    _, stage = only(custom_template, "AWS::ApiGateway::Stage")
    assert plan["Properties"]["Throttle"] == {
        "RateLimit": CUSTOM_CONTEXT["apiRateLimit"],
        "BurstLimit": CUSTOM_CONTEXT["apiBurstLimit"],
    }
    assert plan["Properties"]["Quota"] == {"Limit": CUSTOM_CONTEXT["apiQuotaPerDay"], "Period": "DAY"}
    keys = len(resources(custom_template, "AWS::ApiGateway::ApiKey"))
    (settings,) = stage["Properties"]["MethodSettings"]
    assert settings["ThrottlingRateLimit"] == CUSTOM_CONTEXT["apiRateLimit"] * keys
    assert settings["ThrottlingBurstLimit"] == CUSTOM_CONTEXT["apiBurstLimit"] * keys


def test_the_stage_lets_every_key_use_its_whole_plan_at_once(template: dict[str, Any]) -> None:
    """One key at its plan's rate must not throttle the others: the stage's per-method limit is the sum
    of what the usage plan lets the keys send (by default 50 rps and a burst of 100 per key, one client
    and the operator: 100 and 200), capped by the account's 10,000 and 5,000. Seen to fail (50 == 100)
    with the stage's
    `throttling_rate_limit` back at `settings.api_rate_limit`."""
    _, plan = only(template, "AWS::ApiGateway::UsagePlan")
    _, stage = only(template, "AWS::ApiGateway::Stage")
    keys = len(resources(template, "AWS::ApiGateway::ApiKey"))
    (settings,) = stage["Properties"]["MethodSettings"]

    assert keys >= 2
    assert settings["ThrottlingRateLimit"] == min(plan["Properties"]["Throttle"]["RateLimit"] * keys, 10_000)
    assert settings["ThrottlingBurstLimit"] == min(plan["Properties"]["Throttle"]["BurstLimit"] * keys, 5_000)


@pytest.mark.parametrize("response_type", [t.response_type for t, _, _ in _GATEWAY_ERRORS])
def test_answers_api_gateway_writes_itself_carry_the_apps_security_headers(
    template: dict[str, Any], response_type: str
) -> None:
    """Seen to fail (no ResponseParameters) with `response_headers=gateway_response_headers()` removed."""
    (response,) = [
        r["Properties"]
        for r in resources(template, "AWS::ApiGateway::GatewayResponse").values()
        if r["Properties"]["ResponseType"] == response_type
    ]
    assert response["ResponseParameters"] == {
        f"gatewayresponse.header.{name}": f"'{value}'" for name, value in SECURITY_HEADERS.items()
    }


def test_api_is_regional_and_invoked_only_through_its_routes(cfn: Template, template: dict[str, Any]) -> None:
    cfn.has_resource_properties(
        "AWS::ApiGateway::RestApi",
        {"EndpointConfiguration": {"Types": ["REGIONAL"]}, "ApiKeySourceType": "HEADER"},
    )
    # No account-wide CloudWatch role: the stack does not own that setting.
    cfn.resource_count_is("AWS::ApiGateway::Account", 0)
    # One invoke permission per route, for the deployed stage only (no test-invoke permissions).
    permissions = cfn.find_resources(
        "AWS::Lambda::Permission", {"Properties": {"Principal": "apigateway.amazonaws.com"}}
    )
    assert len(permissions) == len(_routes(template))
    for permission in permissions.values():
        assert "/test-invoke-stage/" not in render(permission["Properties"]["SourceArn"])
