"""What the local runtime reads from the template: the resources it created and the specs of what runs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class UnsupportedTemplateError(ValueError):
    """The template uses something the local runtime cannot reproduce faithfully."""


QUEUE = "AWS::SQS::Queue"
TABLE = "AWS::DynamoDB::Table"
BUCKET = "AWS::S3::Bucket"
TOPIC = "AWS::SNS::Topic"
SECRET = "AWS::SecretsManager::Secret"  # noqa: S105 (a resource type, not a password)
FUNCTION = "AWS::Lambda::Function"
FUNCTION_VERSION = "AWS::Lambda::Version"
FUNCTION_ALIAS = "AWS::Lambda::Alias"
EVENT_SOURCE_MAPPING = "AWS::Lambda::EventSourceMapping"
RULE = "AWS::Events::Rule"
SCHEDULER_SCHEDULE = "AWS::Scheduler::Schedule"
REST_API = "AWS::ApiGateway::RestApi"
API_RESOURCE = "AWS::ApiGateway::Resource"
API_METHOD = "AWS::ApiGateway::Method"
API_STAGE = "AWS::ApiGateway::Stage"
API_DEPLOYMENT = "AWS::ApiGateway::Deployment"
API_USAGE_PLAN = "AWS::ApiGateway::UsagePlan"
API_KEY = "AWS::ApiGateway::ApiKey"
GATEWAY_RESPONSE = "AWS::ApiGateway::GatewayResponse"


@dataclass(frozen=True)
class Resource:
    logical_id: str
    type: str
    ref: str  # what `Ref` returns for this resource
    attributes: Mapping[str, str] = field(default_factory=dict)  # what `Fn::GetAtt` returns


# A worker group's function: its construct id carries the group's suffix, which starts with a digit
# (`FunctionsWorker180s1024MBFunction1A2B3C4D`); the shared worker's does not.
_GROUP_FUNCTION = re.compile(r"Functions[A-Za-z]+(\d\w*?)Function[0-9A-F]{8}")


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    arn: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: Mapping[str, str]
    aliases: tuple[str, ...] = ()  # the names of its `AWS::Lambda::Alias`es
    # A durable function's DurableConfig ExecutionTimeout (none: a plain function).
    durable_timeout_seconds: int | None = None


@dataclass(frozen=True)
class EventSourceMapping:
    logical_id: str
    function: str  # logical id of the function
    queue: str  # logical id of the queue
    queue_url: str
    queue_arn: str
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool
    maximum_concurrency: int | None


class ScheduleKind(StrEnum):
    RULE = "rule"  # an EventBridge scheduled rule: a Scheduled Event, or the target's constant Input
    SCHEDULER = "scheduler"  # an EventBridge Scheduler schedule: its Input with context attributes filled


@dataclass(frozen=True)
class Schedule:
    """What invokes a function on a schedule: a scheduled rule or an EventBridge Scheduler schedule."""

    logical_id: str
    kind: ScheduleKind
    expression: str
    function: str  # logical id of the target function
    arn: str  # the rule's or the schedule's
    input: str | None = None
    enabled: bool = True
    time_zone: str = "UTC"  # a Scheduler schedule's ScheduleExpressionTimezone


@dataclass(frozen=True)
class Route:
    method: str  # GET, POST... or ANY
    resource: str  # API Gateway resource path, e.g. /jobs/{jobId}
    function: str  # logical id of the proxy-integrated function
    api_key_required: bool
    authorization: str = "NONE"  # or AWS_IAM: a SigV4 signature (local_runtime/sigv4.py)


@dataclass(frozen=True)
class UsagePlanLimits:
    rate_limit: float | None = None  # requests per second, steady state
    burst_limit: int | None = None


@dataclass(frozen=True)
class GatewayResponse:
    """A customised API Gateway error response (AWS::ApiGateway::GatewayResponse)."""

    status: int | None
    templates: Mapping[str, str]  # content type -> mapping template
    headers: Mapping[str, str]


@dataclass(frozen=True)
class ApiKeySpec:
    """An API key of the template: its id (what `Ref` gives, and what the api function compares) and the
    name and role its tags give it. The local runtime makes up each key's value."""

    logical_id: str
    id: str
    name: str
    role: str  # a lambdas.config.KeyRole value


@dataclass(frozen=True)
class ApiSpec:
    logical_id: str
    api_id: str
    stage: str
    routes: tuple[Route, ...]
    binary_media_types: tuple[str, ...] = ()
    limits: UsagePlanLimits = UsagePlanLimits()
    gateway_responses: Mapping[str, GatewayResponse] = field(default_factory=dict)  # by ResponseType
    policy: Mapping[str, Any] | None = None  # the resource policy (auth=iam)


@dataclass
class Provisioned:
    """What `provision` created, and the functions and event sources that use it."""

    region: str
    account: str
    stack_name: str
    resources: dict[str, Resource]
    functions: dict[str, FunctionSpec]
    event_source_mappings: list[EventSourceMapping]
    schedules: list[Schedule]
    apis: list[ApiSpec]
    outputs: dict[str, str]
    api_keys: list[ApiKeySpec] = field(default_factory=list)  # enabled ones, clients first

    def function(self, handler: str) -> FunctionSpec:
        """The one function whose `Handler` is `handler` (e.g. `lambdas.handlers.worker.handler`); of the
        workers (one per worker group), the shared one, whose logical id carries no group suffix
        (`FunctionsWorkerFunction…`, a group's `FunctionsWorker180s1024MBFunction…`)."""
        found = [f for f in self.functions.values() if f.handler == handler]
        if len(found) > 1:
            found = [f for f in found if _GROUP_FUNCTION.fullmatch(f.logical_id) is None]
        if len(found) != 1:
            raise LookupError(f"expected one function with handler {handler!r}, found {len(found)}")
        return found[0]

    def invoked(self, identifier: str, qualifier: str | None = None) -> FunctionSpec:
        """The function an Invoke's FunctionName (a name or an ARN, `:qualifier` or not) and Qualifier
        name; LookupError when there is none.

        Emulated: the local runtime keeps no versions, so `$LATEST` and each of the function's aliases
        run the function's code as it is in the working tree (an alias resolves to its function); any
        other qualifier is not found, as Lambda answers for an alias that does not exist.
        """
        name = identifier.removeprefix("arn:aws:lambda:").split(":function:")[-1]
        name, _, named_qualifier = name.partition(":")
        wanted = qualifier or named_qualifier or "$LATEST"
        for function in self.functions.values():
            if function.name == name and wanted in ("$LATEST", *function.aliases):
                return function
        raise LookupError(f"Function not found: {identifier}" + (f":{qualifier}" if qualifier else ""))

    def display_name(self, logical_id: str) -> str:
        """`worker` for the shared worker, `worker-180s1024MB` for a worker group's (and so on)."""
        function = self.functions[logical_id]
        short = function.handler.split(".")[-2] if "." in function.handler else function.handler
        group = _GROUP_FUNCTION.fullmatch(logical_id)
        return f"{short}-{group.group(1)}" if group else short

    def function_env(self, handler: str) -> dict[str, str]:
        """The environment the template gives the function with this handler, as plain strings."""
        return dict(self.function(handler).environment)

    def of_type(self, resource_type: str) -> list[Resource]:
        return [r for r in self.resources.values() if r.type == resource_type]
