"""What runs, read from the template: function specs, event source mappings, schedules, the REST API.

As with the created resources, every property of these types is either read here or listed as having
no local effect; anything else is `UnsupportedTemplateError` (an event source filter or a Lambda
authorizer that the runtime ignored would make it behave unlike the deployed stack).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lambdas.config import KEY_NAME_TAG, KEY_ROLE_TAG, KeyRole
from local_runtime.template import model
from local_runtime.template.intrinsics import Resolver, referenced_id, referenced_ids
from local_runtime.template.model import (
    ApiKeySpec,
    ApiSpec,
    EventSourceMapping,
    FunctionSpec,
    GatewayResponse,
    Resource,
    Route,
    Schedule,
    ScheduleKind,
    UnsupportedTemplateError,
    UsagePlanLimits,
)

# Per read type: every property it may have. Those not read have no local effect: code comes from the
# working tree, roles are not enforced, logs go to the console, tracing and request models are off.
READ_PROPERTIES: Mapping[str, frozenset[str]] = {
    model.FUNCTION: frozenset(
        {"Handler", "Timeout", "MemorySize", "Environment", "DurableConfig"}
        | {"Architectures", "Code", "Description", "LoggingConfig", "Role", "Runtime", "TracingConfig"}
    ),
    # The local runtime keeps no versions: an alias runs its function's code (FunctionSpec.aliases).
    model.FUNCTION_VERSION: frozenset({"FunctionName", "Description"}),
    model.FUNCTION_ALIAS: frozenset({"FunctionName", "FunctionVersion", "Name", "Description"}),
    model.EVENT_SOURCE_MAPPING: frozenset(
        {"EventSourceArn", "FunctionName", "BatchSize", "MaximumBatchingWindowInSeconds"}
        | {"FunctionResponseTypes", "ScalingConfig"}
    ),
    model.RULE: frozenset({"ScheduleExpression", "State", "Targets", "Description"}),
    # GroupName and Description have no local effect; FlexibleTimeWindow is read (OFF only).
    model.SCHEDULER_SCHEDULE: frozenset(
        {"ScheduleExpression", "ScheduleExpressionTimezone", "State", "Target", "FlexibleTimeWindow"}
        | {"GroupName", "Description"}
    ),
    model.REST_API: frozenset({"ApiKeySourceType", "Description", "EndpointConfiguration", "Name", "Policy"}),
    model.API_RESOURCE: frozenset({"ParentId", "PathPart", "RestApiId"}),
    model.API_METHOD: frozenset(
        {"HttpMethod", "ResourceId", "RestApiId", "ApiKeyRequired", "Integration", "AuthorizationType"}
        | {"RequestModels", "RequestParameters", "RequestValidatorId"}
    ),
    model.API_STAGE: frozenset(
        {"StageName", "RestApiId", "AccessLogSetting", "DeploymentId", "MethodSettings", "TracingEnabled"}
    ),
    model.API_DEPLOYMENT: frozenset({"RestApiId", "Description"}),
    model.API_USAGE_PLAN: frozenset({"ApiStages", "Throttle", "Description", "Quota"}),
    model.API_KEY: frozenset({"Description", "Enabled", "Tags"}),
    model.GATEWAY_RESPONSE: frozenset(
        {"ResponseType", "RestApiId", "StatusCode", "ResponseTemplates", "ResponseParameters"}
    ),
}
# Lambda authorizers and Cognito would need reproducing; the stack uses API keys, or IAM (auth=iam),
# whose signatures the gateway checks (local_runtime/sigv4.py).
_AUTHORIZATIONS = frozenset({"NONE", "AWS_IAM"})
_TARGET_KEYS = frozenset({"Arn", "Id", "Input", "RetryPolicy"})
# A Scheduler target's keys: RoleArn has no local effect (roles are not enforced); RetryPolicy and
# DeadLetterConfig neither (a failed invocation is reported on the console, not retried or dead-lettered).
_SCHEDULER_TARGET_KEYS = frozenset({"Arn", "Input", "RoleArn", "RetryPolicy", "DeadLetterConfig"})


class Readers:
    def __init__(
        self,
        definitions: Mapping[str, Mapping[str, Any]],
        resource: Callable[[str], Resource],
        resolver: Resolver,
    ) -> None:
        self._definitions = definitions
        self._resource = resource
        self._resolver = resolver

    def of_type(self, resource_type: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for logical_id, definition in self._definitions.items():
            if definition["Type"] == resource_type:
                yield logical_id, definition.get("Properties", {})

    def _value(self, props: Mapping[str, Any], name: str, default: Any = None) -> Any:
        return self._resolver.resolve(props[name]) if name in props else default

    def functions(self) -> dict[str, FunctionSpec]:
        return {
            logical_id: self._function(logical_id, props)
            for logical_id, props in self.of_type(model.FUNCTION)
        }

    def _function(self, logical_id: str, props: Mapping[str, Any]) -> FunctionSpec:
        resource = self._resource(logical_id)
        variables = props.get("Environment", {}).get("Variables", {})
        durable = self._value(props, "DurableConfig")
        aliases = tuple(
            str(self._value(alias, "Name"))
            for _, alias in self.of_type(model.FUNCTION_ALIAS)
            if referenced_id(alias.get("FunctionName")) == logical_id
        )
        return FunctionSpec(
            logical_id=logical_id,
            name=resource.ref,
            arn=resource.attributes["Arn"],
            handler=str(self._value(props, "Handler")),
            timeout_seconds=int(self._value(props, "Timeout", 3)),
            memory_mb=int(self._value(props, "MemorySize", 128)),
            environment={key: self._resolver.resolve_str(value) for key, value in variables.items()},
            aliases=aliases,
            durable_timeout_seconds=int(durable["ExecutionTimeout"]) if durable else None,
        )

    def _function_by_reference(self, reference: Any) -> str:
        """Logical id of the function a name or ARN (as resolved from the template) points to."""
        value = self._resolver.resolve_str(reference)
        for logical_id, _ in self.of_type(model.FUNCTION):
            resource = self._resource(logical_id)
            if value in (resource.ref, resource.attributes["Arn"]):
                return logical_id
        raise UnsupportedTemplateError(f"{value!r} is not a function of this template")

    def event_source_mappings(self) -> list[EventSourceMapping]:
        return [
            self._mapping(logical_id, props) for logical_id, props in self.of_type(model.EVENT_SOURCE_MAPPING)
        ]

    def _mapping(self, logical_id: str, props: Mapping[str, Any]) -> EventSourceMapping:
        queue_id = referenced_id(props["EventSourceArn"])
        if queue_id is None or self._resource(queue_id).type != model.QUEUE:
            raise UnsupportedTemplateError(
                f"the event source of {logical_id} is not a queue of this template"
            )
        queue = self._resource(queue_id)
        return EventSourceMapping(
            logical_id=logical_id,
            function=self._function_by_reference(props["FunctionName"]),
            queue=queue_id,
            queue_url=queue.ref,
            queue_arn=queue.attributes["Arn"],
            batch_size=int(self._value(props, "BatchSize", 10)),
            batching_window_seconds=int(self._value(props, "MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures="ReportBatchItemFailures"
            in self._value(props, "FunctionResponseTypes", []),
            maximum_concurrency=self._value(props, "ScalingConfig", {}).get("MaximumConcurrency"),
        )

    def schedules(self) -> list[Schedule]:
        return [*self._rules(), *self._scheduler_schedules()]

    def _rules(self) -> Iterator[Schedule]:
        for logical_id, props in self.of_type(model.RULE):
            if "ScheduleExpression" not in props:
                raise UnsupportedTemplateError(f"{logical_id}: only scheduled rules are supported locally")
            for target in props.get("Targets", []):
                unsupported = set(target) - _TARGET_KEYS
                if unsupported:
                    raise UnsupportedTemplateError(
                        f"{logical_id}: target {sorted(unsupported)} is not supported"
                    )
                yield Schedule(
                    logical_id=logical_id,
                    kind=ScheduleKind.RULE,
                    expression=self._resolver.resolve_str(props["ScheduleExpression"]),
                    function=self._function_by_reference(target["Arn"]),
                    arn=self._resource(logical_id).attributes["Arn"],
                    input=None if "Input" not in target else self._resolver.resolve_str(target["Input"]),
                    enabled=self._value(props, "State", "ENABLED") == "ENABLED",
                )

    def _scheduler_schedules(self) -> Iterator[Schedule]:
        for logical_id, props in self.of_type(model.SCHEDULER_SCHEDULE):
            target = props["Target"]
            unsupported = set(target) - _SCHEDULER_TARGET_KEYS
            if unsupported:
                raise UnsupportedTemplateError(f"{logical_id}: target {sorted(unsupported)} is not supported")
            window = self._value(props, "FlexibleTimeWindow", {})
            if window.get("Mode") != "OFF":
                raise UnsupportedTemplateError(f"{logical_id}: only FlexibleTimeWindow OFF runs locally")
            yield Schedule(
                logical_id=logical_id,
                kind=ScheduleKind.SCHEDULER,
                expression=self._resolver.resolve_str(props["ScheduleExpression"]),
                function=self._function_by_reference(target["Arn"]),
                arn=self._resource(logical_id).attributes["Arn"],
                input=None if "Input" not in target else self._resolver.resolve_str(target["Input"]),
                enabled=self._value(props, "State", "ENABLED") == "ENABLED",
                time_zone=str(self._value(props, "ScheduleExpressionTimezone", "UTC")),
            )

    def apis(self) -> list[ApiSpec]:
        return [self._api(logical_id) for logical_id, _ in self.of_type(model.REST_API)]

    def api_keys(self) -> list[ApiKeySpec]:
        """The enabled keys (a disabled one opens nothing in AWS either), client keys first."""
        keys = []
        for logical_id, props in self.of_type(model.API_KEY):
            if not self._value(props, "Enabled", True):
                continue
            tags = {
                str(tag["Key"]): self._resolver.resolve_str(tag["Value"]) for tag in props.get("Tags", [])
            }
            role = tags.get(KEY_ROLE_TAG, KeyRole.CLIENT)
            if role not in set(KeyRole):
                raise UnsupportedTemplateError(f"{logical_id}: {KEY_ROLE_TAG} {role!r} is not a key role")
            name = tags.get(KEY_NAME_TAG, logical_id)
            keys.append(ApiKeySpec(logical_id, self._resource(logical_id).ref, name, role))
        return sorted(keys, key=lambda key: key.role != KeyRole.CLIENT)

    def _of_api(self, resource_type: str, api_id: str) -> Iterator[Mapping[str, Any]]:
        for _, props in self.of_type(resource_type):
            if referenced_id(props.get("RestApiId")) == api_id:
                yield props

    def _api(self, logical_id: str) -> ApiSpec:
        stages = [str(self._value(p, "StageName")) for p in self._of_api(model.API_STAGE, logical_id)]
        return ApiSpec(
            logical_id=logical_id,
            api_id=self._resource(logical_id).ref,
            stage=stages[0] if stages else "prod",
            routes=tuple(
                self._route(logical_id, method) for method in self._of_api(model.API_METHOD, logical_id)
            ),
            limits=self._usage_plan_limits(logical_id),
            gateway_responses={
                str(props["ResponseType"]): self._gateway_response(props)
                for props in self._of_api(model.GATEWAY_RESPONSE, logical_id)
            },
            policy=self._value(self._definitions[logical_id].get("Properties", {}), "Policy"),
        )

    def _route(self, api_id: str, method: Mapping[str, Any]) -> Route:
        integration = method.get("Integration", {})
        if (
            integration.get("Type") != "AWS_PROXY"
            or method.get("AuthorizationType", "NONE") not in _AUTHORIZATIONS
        ):
            raise UnsupportedTemplateError(
                f"a method of {api_id} is not a Lambda proxy integration without authorizer"
            )
        functions = [t for t in referenced_ids(integration.get("Uri")) if self._type(t) == model.FUNCTION]
        function = functions[0] if functions else None
        if function is None:
            raise UnsupportedTemplateError(f"a proxy integration of {api_id} has no function")
        return Route(
            method=str(self._value(method, "HttpMethod")),
            resource=self._api_path(method["ResourceId"]),
            function=function,
            api_key_required=bool(self._value(method, "ApiKeyRequired", False)),
            authorization=str(method.get("AuthorizationType", "NONE")),
        )

    def _gateway_response(self, props: Mapping[str, Any]) -> GatewayResponse:
        status = self._value(props, "StatusCode")
        # Header values are literals in single quotes, as in a method response mapping.
        headers = {
            name.removeprefix("gatewayresponse.header."): _literal(str(self._resolver.resolve(value)))
            for name, value in props.get("ResponseParameters", {}).items()
        }
        return GatewayResponse(
            status=None if status is None else int(status),
            templates={
                k: str(self._resolver.resolve(v)) for k, v in props.get("ResponseTemplates", {}).items()
            },
            headers=headers,
        )

    def _type(self, logical_id: str) -> str | None:
        return self._definitions.get(logical_id, {}).get("Type")

    def _api_path(self, resource_id: Any) -> str:
        logical_id = referenced_id(resource_id)
        if logical_id is None or self._type(logical_id) == model.REST_API:
            return "/"
        props = self._definitions[logical_id]["Properties"]
        return self._api_path(props["ParentId"]).rstrip("/") + "/" + str(self._value(props, "PathPart"))

    def _usage_plan_limits(self, api_id: str) -> UsagePlanLimits:
        for _, plan in self.of_type(model.API_USAGE_PLAN):
            if any(referenced_id(s.get("ApiId")) == api_id for s in plan.get("ApiStages", [])):
                throttle = self._value(plan, "Throttle", {})
                return UsagePlanLimits(
                    rate_limit=throttle.get("RateLimit"), burst_limit=throttle.get("BurstLimit")
                )
        return UsagePlanLimits()


def _literal(value: str) -> str:
    """A static header value: the text inside one outer pair of single quotes (a CSP's own 'self' and
    'none' stay quoted)."""
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value
