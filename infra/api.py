"""The REST API: the api function's routes, proxied, behind API keys, a usage plan and validation."""

import json
from typing import Any, Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.console import add_console_routes
from infra.functions import LOG_RETENTION
from infra.keys import ApiKeys
from infra.nag import acknowledge
from infra.settings import Settings
from lambdas import config
from lambdas.handlers.rest.security import SECURITY_HEADERS

STAGE_NAME: Final = "v1"

# Every route of the api function (the OpenAPI document lists the same ones: tests/infra/test_api.py).
ROUTES: Final = (
    ("POST", "/jobs"),
    ("GET", "/jobs"),
    ("GET", "/jobs/{jobId}"),
    ("GET", "/jobs/{jobId}/children"),
    ("GET", "/jobs/{jobId}/deliveries"),
    ("POST", "/jobs/{jobId}/retry"),
    ("POST", "/jobs/{jobId}/cancel"),
    ("POST", "/jobs/retry"),
    ("POST", "/jobs/cancel"),
    ("GET", "/stats"),
    ("GET", "/limits"),
    ("POST", "/uploads"),
    ("GET", "/webhook-secret"),
    ("POST", "/webhook-secret/rotate"),
)

# Responses API Gateway sends itself, before the function runs, rewritten to the function's error shape.
# Gateway response templates are not VTL: only plain substitution, so the message is API Gateway's own
# `messageString`, which it renders as a quoted JSON string.
_GATEWAY_ERRORS: Final = (
    (apigateway.ResponseType.BAD_REQUEST_BODY, 400, "invalid_request"),
    (apigateway.ResponseType.BAD_REQUEST_PARAMETERS, 400, "invalid_request"),
    (apigateway.ResponseType.INVALID_API_KEY, 403, "forbidden"),
    (apigateway.ResponseType.ACCESS_DENIED, 403, "forbidden"),
    # API Gateway's answer to a route that does not exist.
    (apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN, 404, "not_found"),
    (apigateway.ResponseType.REQUEST_TOO_LARGE, 413, "payload_too_large"),
    (apigateway.ResponseType.UNSUPPORTED_MEDIA_TYPE, 415, "unsupported_media_type"),
    (apigateway.ResponseType.THROTTLED, 429, "throttled"),
    (apigateway.ResponseType.QUOTA_EXCEEDED, 429, "quota_exceeded"),
    (apigateway.ResponseType.INTEGRATION_TIMEOUT, 504, "timeout"),
    (apigateway.ResponseType.DEFAULT_4_XX, None, "bad_request"),
    (apigateway.ResponseType.DEFAULT_5_XX, None, "internal_error"),
)

_ACCESS_LOG_FIELDS: Final = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTimeEpoch",
    "ip": "$context.identity.sourceIp",
    "apiKeyId": "$context.identity.apiKeyId",
    "method": "$context.httpMethod",
    "path": "$context.resourcePath",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integration.latency",
    "error": "$context.error.responseType",
    "xrayTraceId": "$context.xrayTraceId",
}


# API Gateway's regional account-level throttle (the default quota): no stage may allow more.
ACCOUNT_RATE_LIMIT: Final = 10_000
ACCOUNT_BURST_LIMIT: Final = 5_000


def stage_throttle(settings: Settings, keys: int) -> tuple[int, int]:
    """The stage's (rate, burst) per method: what the usage plan lets every key send at once, so the
    stage never throttles one caller because of another (each key is held to its own plan limit),
    capped at the account's throttle."""
    return (
        min(settings.api_rate_limit * keys, ACCOUNT_RATE_LIMIT),
        min(settings.api_burst_limit * keys, ACCOUNT_BURST_LIMIT),
    )


def gateway_response_headers() -> dict[str, str]:
    """The app's security headers (one source: lambdas/handlers/rest/security.py) on the answers API
    Gateway writes itself, as static values: the literal between one outer pair of single quotes."""
    return {name: f"'{value}'" for name, value in SECURITY_HEADERS.items()}


def error_template(code: str) -> str:
    return '{"error": {"code": "%s", "message": $context.error.messageString}}' % code  # noqa: UP031


def submit_job_schema() -> apigateway.JsonSchema:
    """The body of POST /jobs, checked before the function is invoked (which checks it again in full)."""
    return apigateway.JsonSchema(
        schema=apigateway.JsonSchemaVersion.DRAFT4,
        title="SubmitJob",
        type=apigateway.JsonSchemaType.OBJECT,
        required=["type", "payload"],
        additional_properties=False,
        properties={
            "type": apigateway.JsonSchema(type=apigateway.JsonSchemaType.STRING, min_length=1, max_length=64),
            "payload": apigateway.JsonSchema(type=apigateway.JsonSchemaType.OBJECT),
            "maxAttempts": apigateway.JsonSchema(
                type=apigateway.JsonSchemaType.INTEGER, minimum=1, maximum=config.MAX_ATTEMPTS_LIMIT
            ),
            "delaySeconds": apigateway.JsonSchema(
                type=apigateway.JsonSchemaType.INTEGER, minimum=0, maximum=config.MAX_DELAY_SECONDS
            ),
        },
    )


class JobsApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        settings: Settings,
        keys: ApiKeys,
    ) -> None:
        super().__init__(scope, construct_id)

        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.rest_api = apigateway.RestApi(
            self,
            "RestApi",
            description="offload: submit jobs and read their status",
            endpoint_configuration=apigateway.EndpointConfiguration(types=[apigateway.EndpointType.REGIONAL]),
            cloud_watch_role=False,
            api_key_source_type=apigateway.ApiKeySourceType.HEADER,
            default_method_options=apigateway.MethodOptions(api_key_required=True),
            deploy_options=apigateway.StageOptions(
                stage_name=STAGE_NAME,
                tracing_enabled=True,
                metrics_enabled=True,
                throttling_rate_limit=stage_throttle(settings, len(keys.all))[0],
                throttling_burst_limit=stage_throttle(settings, len(keys.all))[1],
                access_log_destination=apigateway.LogGroupLogDestination(self.access_logs),
                access_log_format=apigateway.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS)),
            ),
        )
        api = self.rest_api
        # The stack exports the URL itself, as ApiUrl.
        api.node.try_remove_child("Endpoint")

        for response_type, status, code in _GATEWAY_ERRORS:
            api.add_gateway_response(
                response_type.response_type.title().replace("_", ""),
                type=response_type,
                status_code=str(status) if status else None,
                templates={"application/json": error_template(code)},
                response_headers=gateway_response_headers(),
            )
        self._add_routes(handler)
        self._add_usage_plan(settings, keys)
        self._acknowledge_findings()

    def _add_routes(self, handler: lambda_.IFunction) -> None:
        api = self.rest_api
        validator = api.add_request_validator(
            "RequestValidator", validate_request_body=True, validate_request_parameters=True
        )
        submit_job = api.add_model(
            "SubmitJobModel", content_type="application/json", schema=submit_job_schema()
        )
        integration = apigateway.LambdaIntegration(handler, allow_test_invoke=False)
        for method, path in ROUTES:
            options: dict[str, Any] = {}
            if "{jobId}" in path:
                options["request_parameters"] = {"method.request.path.jobId": True}
            if (method, path) == ("POST", "/jobs"):
                options["request_models"] = {"application/json": submit_job}
            api.root.resource_for_path(path).add_method(
                method, integration, request_validator=validator, **options
            )
        add_console_routes(api, integration, validator)

    def _add_usage_plan(self, settings: Settings, keys: ApiKeys) -> None:
        api = self.rest_api
        plan = api.add_usage_plan(
            "UsagePlan",
            description="offload clients",
            throttle=apigateway.ThrottleSettings(
                rate_limit=settings.api_rate_limit, burst_limit=settings.api_burst_limit
            ),
            quota=apigateway.QuotaSettings(limit=settings.api_quota_per_day, period=apigateway.Period.DAY),
            api_stages=[apigateway.UsagePlanPerApiStage(api=api, stage=api.deployment_stage)],
        )
        # The throttle and quota apply per key: each client (and the operator) has its own.
        for key in keys.all:
            plan.add_api_key(key)

    def _acknowledge_findings(self) -> None:
        for rule, reason in (
            (
                "AwsSolutions-APIG4",
                "Callers are services, each identified by its own API key on every method and capped by the "
                "usage plan; there are no end users to authorize.",
            ),
            (
                "AwsSolutions-COG4",
                "No end users, so no Cognito user pool: callers are services with API keys.",
            ),
            (
                "AwsSolutions-APIG3",
                "Abuse is bounded per key by the usage plan's throttle and quota, and per stage by stage "
                "throttling at the sum of the keys' plan limits (one key cannot use up the others'); a WAF web ACL is an account-level choice attached outside this stack.",
            ),
            (
                "AwsSolutions-APIG6",
                "Every request is recorded in the JSON access log. Execution logging needs the account-wide "
                "API Gateway CloudWatch role, which this stack does not own.",
            ),
        ):
            acknowledge(self.rest_api, rule, reason)
