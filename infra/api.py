"""The REST API: the api function's routes, proxied, behind API keys, a usage plan and validation.

With CDK context `auth=iam` the routes are AWS_IAM instead (the console's two pages stay open, as they
hold no data): API Gateway checks each request's SigV4 signature and, through the API's resource
policy, that its principal is one of the mapped roles (iamClients, iamOperators); there are no API
keys and no usage plan, and the stage's throttle bounds all callers together.
"""

import json
from typing import Any, Final

from aws_cdk import RemovalPolicy
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.console import CONSOLE_PATH, add_console_routes
from infra.functions import LOG_RETENTION
from infra.keys import ApiKeys
from infra.nag import acknowledge
from infra.settings import Settings
from lambdas import config
from lambdas.handlers.rest.security import SECURITY_HEADERS
from lambdas.models.iam import IamCallers

# Every route of the api function (the OpenAPI document lists the same ones: tests/infra/test_api.py).
ROUTES: Final = (
    ("POST", "/jobs"),
    ("GET", "/jobs"),
    ("GET", "/jobs/{jobId}"),
    ("GET", "/jobs/{jobId}/children"),
    ("GET", "/jobs/{jobId}/deliveries"),
    ("POST", "/jobs/{jobId}/retry"),
    ("POST", "/jobs/{jobId}/cancel"),
    ("POST", "/jobs/{jobId}/events"),
    ("POST", "/jobs/{jobId}/reschedule"),
    ("POST", "/jobs/retry"),
    ("POST", "/jobs/cancel"),
    ("POST", "/schedules"),
    ("GET", "/schedules"),
    ("GET", "/schedules/{scheduleId}"),
    ("PATCH", "/schedules/{scheduleId}"),
    ("DELETE", "/schedules/{scheduleId}"),
    ("POST", "/schedules/{scheduleId}/run"),
    ("GET", "/stats"),
    ("GET", "/limits"),
    ("POST", "/uploads"),
    ("GET", "/webhook-secret"),
    ("POST", "/webhook-secret/rotate"),
    ("GET", "/openapi.json"),
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
# With IAM callers: a bad or stale signature is a 403 like any refused caller, and so is a request
# without one, which API Gateway answers as it answers a route that does not exist (it cannot tell them
# apart), so in this mode an unknown route is a 403 too.
_IAM_GATEWAY_ERRORS: Final = (
    (apigateway.ResponseType.INVALID_SIGNATURE, 403, "forbidden"),
    (apigateway.ResponseType.EXPIRED_TOKEN, 403, "forbidden"),
    (apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN, 403, "forbidden"),
)


def gateway_errors(auth: config.AuthMode) -> tuple[tuple[apigateway.ResponseType, int | None, str], ...]:
    """The gateway responses of the stack in this mode (the API-key mode's are `_GATEWAY_ERRORS`)."""
    if auth == config.AuthMode.API_KEY:
        return _GATEWAY_ERRORS
    replaced = {response_type.response_type for response_type, _, _ in _IAM_GATEWAY_ERRORS}
    kept = tuple(error for error in _GATEWAY_ERRORS if error[0].response_type not in replaced)
    return (*kept, *_IAM_GATEWAY_ERRORS)


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
    capped at the account's throttle. With IAM callers `keys` counts the mapped roles."""
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


def method_resource(method: str, path: str) -> str:
    """A method in a resource policy: `execute-api:/<stage>/<METHOD>/<path>`, a path parameter as `*`."""
    segments = ["*" if part.startswith("{") else part for part in path.strip("/").split("/")]
    return f"execute-api:/*/{method}/{'/'.join(segments)}"


def resource_policy(callers: IamCallers) -> iam.PolicyDocument:
    """Only the mapped roles may call the routes (an explicit deny for every other principal, so an
    identity policy granting execute-api:Invoke in the API's account does not let one in); the console's
    pages stay open to anyone, which an API with a resource policy needs saying."""
    routes = [method_resource(method, path) for method, path in ROUTES]
    roles = list(callers.role_arns)
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                actions=["execute-api:Invoke"],
                principals=[iam.ArnPrincipal(arn) for arn in roles],
                resources=routes,
            ),
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=["execute-api:Invoke"],
                principals=[iam.AnyPrincipal()],
                resources=routes,
                conditions={"StringNotEquals": {"aws:PrincipalArn": roles}},
            ),
            iam.PolicyStatement(
                actions=["execute-api:Invoke"],
                principals=[iam.AnyPrincipal()],
                resources=[method_resource("GET", CONSOLE_PATH), method_resource("GET", f"{CONSOLE_PATH}/*")],
            ),
        ]
    )


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
                type=apigateway.JsonSchemaType.INTEGER, minimum=1, maximum=config.MAX_POLICY_ATTEMPTS
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
        keys: ApiKeys | None,
    ) -> None:
        super().__init__(scope, construct_id)
        iam_mode = keys is None
        callers = len(settings.iam_callers.role_arns) if keys is None else len(keys.all)
        log_fields = (
            {**_ACCESS_LOG_FIELDS, "userArn": "$context.identity.userArn"} if iam_mode else _ACCESS_LOG_FIELDS
        )

        self.access_logs = logs.LogGroup(
            self, "AccessLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.rest_api = apigateway.RestApi(
            self,
            "RestApi",
            description="offload: submit jobs and read their status",
            endpoint_configuration=apigateway.EndpointConfiguration(types=[apigateway.EndpointType.REGIONAL]),
            cloud_watch_role=False,
            api_key_source_type=None if iam_mode else apigateway.ApiKeySourceType.HEADER,
            default_method_options=None if iam_mode else apigateway.MethodOptions(api_key_required=True),
            policy=resource_policy(settings.iam_callers) if iam_mode else None,
            deploy_options=apigateway.StageOptions(
                stage_name=config.API_STAGE,
                tracing_enabled=True,
                metrics_enabled=True,
                throttling_rate_limit=stage_throttle(settings, callers)[0],
                throttling_burst_limit=stage_throttle(settings, callers)[1],
                access_log_destination=apigateway.LogGroupLogDestination(self.access_logs),
                access_log_format=apigateway.AccessLogFormat.custom(json.dumps(log_fields)),
            ),
        )
        api = self.rest_api
        # The stack exports the URL itself, as ApiUrl.
        api.node.try_remove_child("Endpoint")

        for response_type, status, code in gateway_errors(settings.auth):
            api.add_gateway_response(
                response_type.response_type.title().replace("_", ""),
                type=response_type,
                status_code=str(status) if status else None,
                templates={"application/json": error_template(code)},
                response_headers=gateway_response_headers(),
            )
        self._add_routes(handler, iam_mode)
        if keys is not None:
            self._add_usage_plan(settings, keys)
        self._acknowledge_findings(iam_mode)

    def _add_routes(self, handler: lambda_.IFunction, iam_mode: bool) -> None:
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
            if iam_mode:
                options["authorization_type"] = apigateway.AuthorizationType.IAM
            for parameter in ("jobId", "scheduleId"):
                if f"{{{parameter}}}" in path:
                    options["request_parameters"] = {f"method.request.path.{parameter}": True}
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

    def _acknowledge_findings(self, iam_mode: bool) -> None:
        callers = "signed by their IAM roles" if iam_mode else "with API keys"
        for rule, reason in (
            (
                "AwsSolutions-APIG4",
                (
                    "The console's two pages hold no data (the page signs nothing and asks for nothing); "
                    "every data route is AWS_IAM."
                )
                if iam_mode
                else (
                    "Callers are services, each identified by its own API key on every method and capped "
                    "by the usage plan; there are no end users to authorize."
                ),
            ),
            (
                "AwsSolutions-COG4",
                f"No end users, so no Cognito user pool: callers are services {callers}.",
            ),
            (
                "AwsSolutions-APIG3",
                (
                    "Abuse is bounded by stage throttling at the plan limit times the mapped roles (API "
                    "Gateway throttles per caller only by API key, which IAM callers do not have); a WAF "
                    "web ACL is an account-level choice attached outside this stack."
                )
                if iam_mode
                else (
                    "Abuse is bounded per key by the usage plan's throttle and quota, and per stage by stage "
                    "throttling at the sum of the keys' plan limits (one key cannot use up the others'); a WAF web ACL is an account-level choice attached outside this stack."
                ),
            ),
            (
                "AwsSolutions-APIG6",
                "Every request is recorded in the JSON access log. Execution logging needs the account-wide "
                "API Gateway CloudWatch role, which this stack does not own.",
            ),
        ):
            acknowledge(self.rest_api, rule, reason)
