"""Create the stack's resources from the synthesized CloudFormation template, against any AWS endpoint.

The template is the single definition: queues get the visibility timeout and redrive policy written
there, tables their keys, indexes and TTL, and each function's environment is the template's
`Environment.Variables` with every intrinsic function resolved against what was created. The local
runtime calls this against moto's server; the integration tests call it inside `mock_aws`.

Only what the pipeline needs is created; other resource types (roles, alarms, log groups...) get a
physical id so references to them resolve, and reading an attribute of theirs that cannot be known
locally is an error rather than a made-up value.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import boto3

from lambdas import config
from local_runtime.context import DEFAULT_ACCOUNT, DEFAULT_REGION


class UnsupportedTemplateError(ValueError):
    """The template uses something the local runtime cannot reproduce faithfully."""


@dataclass(frozen=True)
class Resource:
    logical_id: str
    type: str
    ref: str  # what `Ref` returns for this resource
    attributes: Mapping[str, str] = field(default_factory=dict)  # what `Fn::GetAtt` returns


@dataclass(frozen=True)
class FunctionSpec:
    logical_id: str
    name: str
    arn: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: Mapping[str, str]
    reserved_concurrency: int | None = None


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
    enabled: bool = True


@dataclass(frozen=True)
class Schedule:
    logical_id: str
    expression: str
    function: str  # logical id of the target function
    rule_arn: str
    input: str | None = None
    enabled: bool = True

    @property
    def rate_seconds(self) -> int:
        """The period of a `rate(...)` expression, in seconds."""
        match = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", self.expression.strip())
        if match is None:
            raise UnsupportedTemplateError(f"only rate() schedules run locally, not {self.expression!r}")
        unit = {"minute": 60, "hour": 3600, "day": 86400}[match.group(2).rstrip("s")]
        return int(match.group(1)) * unit


@dataclass(frozen=True)
class Route:
    method: str  # GET, POST... or ANY
    resource: str  # API Gateway resource path, e.g. /jobs/{jobId}
    function: str  # logical id of the proxy-integrated function
    api_key_required: bool


@dataclass(frozen=True)
class UsagePlanLimits:
    rate_limit: float | None = None  # requests per second, steady state
    burst_limit: int | None = None


@dataclass(frozen=True)
class ApiSpec:
    logical_id: str
    api_id: str
    stage: str
    routes: tuple[Route, ...]
    binary_media_types: tuple[str, ...] = ()
    limits: UsagePlanLimits = UsagePlanLimits()


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

    def function(self, handler: str) -> FunctionSpec:
        """The one function whose `Handler` is `handler` (e.g. `lambdas.handlers.worker.handler`)."""
        found = [f for f in self.functions.values() if f.handler == handler]
        if len(found) != 1:
            raise LookupError(f"expected one function with handler {handler!r}, found {len(found)}")
        return found[0]

    def function_env(self, handler: str) -> dict[str, str]:
        """The environment the template gives the function with this handler, as plain strings."""
        return dict(self.function(handler).environment)

    def of_type(self, resource_type: str) -> list[Resource]:
        return [r for r in self.resources.values() if r.type == resource_type]


_SQS = "AWS::SQS::Queue"
_TABLE = "AWS::DynamoDB::Table"
_GLOBAL_TABLE = "AWS::DynamoDB::GlobalTable"
_BUCKET = "AWS::S3::Bucket"
_TOPIC = "AWS::SNS::Topic"
_SECRET = "AWS::SecretsManager::Secret"  # noqa: S105 (a resource type, not a password)
_FUNCTION = "AWS::Lambda::Function"
_ESM = "AWS::Lambda::EventSourceMapping"
_RULE = "AWS::Events::Rule"
_SCHEDULE = "AWS::Scheduler::Schedule"
_REST_API = "AWS::ApiGateway::RestApi"
_EMAIL_IDENTITY = "AWS::SES::EmailIdentity"

_NO_VALUE = object()  # AWS::NoValue: the property is removed


def provision(
    template: Mapping[str, Any],
    *,
    session: boto3.session.Session | None = None,
    endpoint_url: str | None = None,
    stack_name: str = config.STACK_ID,
) -> Provisioned:
    """Create the template's queues, tables, bucket, topic and secret, and resolve everything else.

    Works inside `mock_aws` (no endpoint) and against moto's server (`endpoint_url`).
    """
    return _Provisioner(template, session or boto3.session.Session(), endpoint_url, stack_name).run()


class _Provisioner:
    def __init__(
        self,
        template: Mapping[str, Any],
        session: boto3.session.Session,
        endpoint_url: str | None,
        stack_name: str,
    ) -> None:
        self.template_resources: Mapping[str, Mapping[str, Any]] = template.get("Resources", {})
        self.parameters: Mapping[str, Mapping[str, Any]] = template.get("Parameters", {})
        self.conditions: Mapping[str, Any] = template.get("Conditions", {})
        self.outputs: Mapping[str, Mapping[str, Any]] = template.get("Outputs", {})
        self.stack_name = stack_name
        self.region = session.region_name or DEFAULT_REGION
        self._session = session
        self._endpoint_url = endpoint_url
        self.client: Callable[[str], Any] = cache(self._make_client)
        self.account = DEFAULT_ACCOUNT
        self.created: dict[str, Resource] = {}
        self._creating: set[str] = set()
        self._creators: dict[str, Callable[[str, Mapping[str, Any]], Resource]] = {
            _SQS: self._queue,
            _TABLE: self._table,
            _GLOBAL_TABLE: self._table,
            _BUCKET: self._bucket,
            _TOPIC: self._topic,
            _SECRET: self._secret,
            _EMAIL_IDENTITY: self._email_identity,
        }

    def _make_client(self, service: str) -> Any:
        return self._session.client(service, region_name=self.region, endpoint_url=self._endpoint_url)

    # -- driving ---------------------------------------------------------------------------------

    def run(self) -> Provisioned:
        self.account = self.client("sts").get_caller_identity()["Account"]
        for logical_id in self.template_resources:
            if self._enabled(logical_id):
                self.resource(logical_id)
        functions = {
            logical_id: self._function_spec(logical_id, props)
            for logical_id, props in self._resources_of(_FUNCTION)
            if "Handler" in props
        }
        return Provisioned(
            region=self.region,
            account=self.account,
            stack_name=self.stack_name,
            resources=dict(self.created),
            functions=functions,
            event_source_mappings=[self._esm(lid, props) for lid, props in self._resources_of(_ESM)],
            schedules=[s for s in self._schedules() if s is not None],
            apis=[self._api(lid, props) for lid, props in self._resources_of(_REST_API)],
            outputs=self._outputs(),
        )

    def _enabled(self, logical_id: str) -> bool:
        condition = self.template_resources[logical_id].get("Condition")
        return condition is None or self._condition(condition)

    def _resources_of(self, resource_type: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for logical_id, definition in self.template_resources.items():
            if definition.get("Type") == resource_type and self._enabled(logical_id):
                yield logical_id, definition.get("Properties", {})

    def resource(self, logical_id: str) -> Resource:
        if logical_id in self.created:
            return self.created[logical_id]
        definition = self.template_resources.get(logical_id)
        if definition is None:
            raise UnsupportedTemplateError(f"reference to unknown resource {logical_id!r}")
        if logical_id in self._creating:
            raise UnsupportedTemplateError(f"circular reference through {logical_id!r}")
        self._creating.add(logical_id)
        try:
            resource_type = definition["Type"]
            props = definition.get("Properties", {})
            creator = self._creators.get(resource_type, self._placeholder)
            resource = creator(logical_id, props)
        finally:
            self._creating.discard(logical_id)
        self.created[logical_id] = resource
        return resource

    def _name(self, logical_id: str, max_length: int) -> str:
        return f"{self.stack_name}-{logical_id}"[:max_length]

    # -- intrinsic functions ----------------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [r for r in (self.resolve(v) for v in value) if r is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._ref(arg)
            if key.startswith("Fn::") or key == "Condition":
                return self._intrinsic(key, arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def resolve_str(self, value: Any) -> str:
        resolved = self.resolve(value)
        if isinstance(resolved, bool):
            return "true" if resolved else "false"
        if isinstance(resolved, int | float | str):
            return str(resolved)
        return json.dumps(resolved)

    def _ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account}:stack/{self.stack_name}/local",
            "AWS::NoValue": _NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            if "Default" not in self.parameters[name]:
                raise UnsupportedTemplateError(f"parameter {name!r} has no default")
            return self.parameters[name]["Default"]
        return self.resource(name).ref

    def _get_att(self, logical_id: str, attribute: str) -> str:
        resource = self.resource(logical_id)
        if attribute not in resource.attributes:
            raise UnsupportedTemplateError(
                f"attribute {attribute!r} of {logical_id} ({resource.type}) is not known locally"
            )
        return resource.attributes[attribute]

    def _intrinsic(self, name: str, arg: Any) -> Any:
        if name == "Fn::GetAtt":
            logical_id, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
            return self._get_att(logical_id, self.resolve(attribute))
        if name == "Fn::Join":
            delimiter, items = arg
            return self.resolve(delimiter).join(self.resolve_str(i) for i in self.resolve(items))
        if name == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(self.resolve(index))]
        if name == "Fn::Split":
            delimiter, source = arg
            return self.resolve_str(source).split(self.resolve(delimiter))
        if name == "Fn::Sub":
            return self._sub(arg)
        if name == "Fn::If":
            condition, when_true, when_false = arg
            return self.resolve(when_true if self._condition(condition) else when_false)
        if name == "Fn::GetAZs":
            return [f"{self.region}{zone}" for zone in "abc"]
        if name == "Fn::Base64":
            import base64

            return base64.b64encode(self.resolve_str(arg).encode()).decode()
        if name in {"Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition"}:
            return self._evaluate_condition({name: arg})
        raise UnsupportedTemplateError(f"{name} is not supported by the local runtime")

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])

        def replace(match: re.Match[str]) -> str:
            token = match.group(1)
            if token.startswith("!"):
                return "${" + token[1:] + "}"
            if token in variables:
                return self.resolve_str(variables[token])
            if "." in token and not token.startswith("AWS::"):
                logical_id, attribute = token.split(".", 1)
                return self._get_att(logical_id, attribute)
            return self.resolve_str({"Ref": token})

        return re.sub(r"\$\{([^}]+)\}", replace, text)

    def _condition(self, name: str) -> bool:
        if name not in self.conditions:
            raise UnsupportedTemplateError(f"unknown condition {name!r}")
        return bool(self._evaluate_condition(self.conditions[name]))

    def _evaluate_condition(self, expression: Mapping[str, Any]) -> bool:
        ((name, arg),) = expression.items()
        if name == "Condition":
            return self._condition(arg)
        if name == "Fn::Equals":
            return bool(self.resolve(arg[0]) == self.resolve(arg[1]))
        if name == "Fn::Not":
            return not self._evaluate_condition(arg[0])
        if name == "Fn::And":
            return all(self._evaluate_condition(a) for a in arg)
        if name == "Fn::Or":
            return any(self._evaluate_condition(a) for a in arg)
        raise UnsupportedTemplateError(f"{name} is not a condition function")

    # -- resources created in the endpoint -------------------------------------------------------

    def _only(self, props: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
        """The named properties, resolved; the others (encryption keys, policies...) are never read."""
        return {name: self.resolve(props[name]) for name in names if name in props}

    def _queue(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        attribute_names = (
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "DelaySeconds",
            "MaximumMessageSize",
            "ReceiveMessageWaitTimeSeconds",
            "FifoQueue",
            "ContentBasedDeduplication",
            "SqsManagedSseEnabled",
            "DeduplicationScope",
            "FifoThroughputLimit",
        )
        props = self._only(props, (*attribute_names, "QueueName", "RedrivePolicy", "RedriveAllowPolicy"))
        fifo = bool(props.get("FifoQueue"))
        name = props.get("QueueName") or self._name(logical_id, 75) + (".fifo" if fifo else "")
        attributes = {k: _attribute_str(props[k]) for k in attribute_names if k in props}
        for policy in ("RedrivePolicy", "RedriveAllowPolicy"):
            if policy in props:
                value = props[policy]
                attributes[policy] = value if isinstance(value, str) else json.dumps(value)
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Resource(logical_id, _SQS, url, {"Arn": arn, "QueueName": name, "QueueUrl": url})

    def _table(self, logical_id: str, raw: Mapping[str, Any]) -> Resource:
        props = self._only(
            raw,
            (
                "TableName",
                "KeySchema",
                "AttributeDefinitions",
                "BillingMode",
                "ProvisionedThroughput",
                "GlobalSecondaryIndexes",
                "LocalSecondaryIndexes",
                "StreamSpecification",
                "TimeToLiveSpecification",
                "PointInTimeRecoverySpecification",
            ),
        )
        resource_type = self.template_resources[logical_id]["Type"]
        name = props.get("TableName") or self._name(logical_id, 255)
        replica = next(
            (
                self._only(r, ("PointInTimeRecoverySpecification",))
                for r in raw.get("Replicas", [])
                if self.resolve(r.get("Region")) == self.region
            ),
            {},
        )
        billing = props.get(
            "BillingMode", "PAY_PER_REQUEST" if resource_type == _GLOBAL_TABLE else "PROVISIONED"
        )
        request: dict[str, Any] = {
            "TableName": name,
            "KeySchema": props["KeySchema"],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "BillingMode": billing,
        }
        throughput = props.get("ProvisionedThroughput", {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
        if billing == "PROVISIONED":
            request["ProvisionedThroughput"] = throughput
        indexes = [
            {
                "IndexName": gsi["IndexName"],
                "KeySchema": gsi["KeySchema"],
                "Projection": gsi["Projection"],
                **(
                    {"ProvisionedThroughput": gsi.get("ProvisionedThroughput", throughput)}
                    if billing == "PROVISIONED"
                    else {}
                ),
            }
            for gsi in props.get("GlobalSecondaryIndexes", [])
        ]
        if indexes:
            request["GlobalSecondaryIndexes"] = indexes
        if props.get("LocalSecondaryIndexes"):
            request["LocalSecondaryIndexes"] = [
                {k: lsi[k] for k in ("IndexName", "KeySchema", "Projection")}
                for lsi in props["LocalSecondaryIndexes"]
            ]
        if "StreamSpecification" in props:
            request["StreamSpecification"] = {
                "StreamEnabled": True,
                "StreamViewType": props["StreamSpecification"]["StreamViewType"],
            }
        dynamodb = self.client("dynamodb")
        description = dynamodb.create_table(**request)["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        pitr = replica.get("PointInTimeRecoverySpecification") or props.get(
            "PointInTimeRecoverySpecification"
        )
        if pitr and pitr.get("PointInTimeRecoveryEnabled"):
            dynamodb.update_continuous_backups(
                TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
            )
        attributes = {"Arn": description["TableArn"]}
        if "LatestStreamArn" in description:
            attributes["StreamArn"] = description["LatestStreamArn"]
        return Resource(logical_id, resource_type, name, attributes)

    def _bucket(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        props = self._only(props, ("BucketName", "CorsConfiguration"))
        name = props.get("BucketName") or re.sub(r"[^a-z0-9-]", "-", self._name(logical_id, 63).lower())
        s3 = self.client("s3")
        if self.region == "us-east-1":
            s3.create_bucket(Bucket=name)
        else:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": self.region})
        rules = props.get("CorsConfiguration", {}).get("CorsRules", [])
        if rules:
            renamed = {"ExposedHeaders": "ExposeHeaders", "Id": "ID", "MaxAge": "MaxAgeSeconds"}
            s3.put_bucket_cors(
                Bucket=name,
                CORSConfiguration={
                    "CORSRules": [{renamed.get(k, k): v for k, v in rule.items()} for rule in rules]
                },
            )
        domain = f"{name}.s3.amazonaws.com"
        return Resource(
            logical_id,
            _BUCKET,
            name,
            {
                "Arn": f"arn:aws:s3:::{name}",
                "DomainName": domain,
                "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
            },
        )

    def _topic(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        props = self._only(props, ("TopicName", "FifoTopic"))
        fifo = bool(props.get("FifoTopic"))
        name = props.get("TopicName") or self._name(logical_id, 251) + (".fifo" if fifo else "")
        attributes = {"FifoTopic": "true"} if fifo else {}
        arn = self.client("sns").create_topic(Name=name, Attributes=attributes)["TopicArn"]
        return Resource(logical_id, _TOPIC, arn, {"TopicArn": arn, "TopicName": name})

    def _secret(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        props = self._only(props, ("Name", "SecretString", "GenerateSecretString"))
        name = props.get("Name") or self._name(logical_id, 512)
        value = props.get("SecretString")
        if value is None:
            value = generate_secret_string(props.get("GenerateSecretString", {}))
        arn = self.client("secretsmanager").create_secret(Name=name, SecretString=value)["ARN"]
        return Resource(logical_id, _SECRET, arn, {"Id": arn})

    def _email_identity(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        identity = self.resolve_str(props["EmailIdentity"])
        verify_email_identity(self.client, identity)
        return Resource(logical_id, _EMAIL_IDENTITY, identity)

    def _placeholder(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        """A resource that is not created locally: only its name and, for some types, its ARN."""
        resource_type = self.template_resources[logical_id]["Type"]
        if resource_type == _FUNCTION:
            name = self.resolve(props.get("FunctionName")) or self._name(logical_id, 64)
            arn = f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"
            return Resource(logical_id, resource_type, name, {"Arn": arn})
        if resource_type == "AWS::IAM::Role":
            name = self._name(logical_id, 64)
            return Resource(
                logical_id, resource_type, name, {"Arn": f"arn:aws:iam::{self.account}:role/{name}"}
            )
        if resource_type == _RULE:
            name = self._name(logical_id, 64)
            arn = f"arn:aws:events:{self.region}:{self.account}:rule/{name}"
            return Resource(logical_id, resource_type, name, {"Arn": arn})
        if resource_type == _REST_API:
            api_id = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(10))
            return Resource(logical_id, resource_type, api_id, {"RootResourceId": f"{logical_id}-root"})
        if resource_type == "AWS::ApiGateway::Stage":
            return Resource(logical_id, resource_type, str(self.resolve(props.get("StageName", logical_id))))
        return Resource(logical_id, resource_type, self._name(logical_id, 255))

    # -- what runs: functions, event sources, schedules, APIs -------------------------------------

    def _function_spec(self, logical_id: str, props: Mapping[str, Any]) -> FunctionSpec:
        resource = self.resource(logical_id)
        variables = props.get("Environment", {}).get("Variables", {})
        environment = {
            key: self.resolve_str(value)
            for key, value in variables.items()
            if self.resolve(value) is not _NO_VALUE
        }
        reserved = props.get("ReservedConcurrentExecutions")
        return FunctionSpec(
            logical_id=logical_id,
            name=resource.ref,
            arn=resource.attributes["Arn"],
            handler=str(self.resolve(props["Handler"])),
            timeout_seconds=int(self.resolve(props.get("Timeout", 3))),
            memory_mb=int(self.resolve(props.get("MemorySize", 128))),
            environment=environment,
            reserved_concurrency=None if reserved is None else int(self.resolve(reserved)),
        )

    def _function_by_reference(self, reference: Any) -> str:
        """Logical id of the function a name or ARN (as resolved from the template) points to."""
        value = self.resolve_str(reference)
        for logical_id, _ in self._resources_of(_FUNCTION):
            resource = self.resource(logical_id)
            if value in (resource.ref, resource.attributes["Arn"]) or value.startswith(
                resource.attributes["Arn"] + ":"
            ):
                return logical_id
        raise UnsupportedTemplateError(f"{value!r} is not a function of this template")

    def _esm(self, logical_id: str, props: Mapping[str, Any]) -> EventSourceMapping:
        source_arn = self.resolve_str(props["EventSourceArn"])
        queue = next((r for r in self.of_type(_SQS) if r.attributes["Arn"] == source_arn), None)
        if queue is None:
            raise UnsupportedTemplateError(f"event source {source_arn} of {logical_id} is not a queue")
        scaling = self.resolve(props.get("ScalingConfig", {}))
        return EventSourceMapping(
            logical_id=logical_id,
            function=self._function_by_reference(props["FunctionName"]),
            queue=queue.logical_id,
            queue_url=queue.ref,
            queue_arn=source_arn,
            batch_size=int(self.resolve(props.get("BatchSize", 10))),
            batching_window_seconds=int(self.resolve(props.get("MaximumBatchingWindowInSeconds", 0))),
            report_batch_item_failures="ReportBatchItemFailures"
            in self.resolve(props.get("FunctionResponseTypes", [])),
            maximum_concurrency=scaling.get("MaximumConcurrency"),
            enabled=bool(self.resolve(props.get("Enabled", True))),
        )

    def of_type(self, resource_type: str) -> list[Resource]:
        return [r for r in self.created.values() if r.type == resource_type]

    def _schedules(self) -> Iterator[Schedule | None]:
        for logical_id, props in self._resources_of(_RULE):
            if "ScheduleExpression" not in props:
                continue
            for target in props.get("Targets", []):
                yield self._schedule(logical_id, props, target, self.resource(logical_id).attributes["Arn"])
        for logical_id, props in self._resources_of(_SCHEDULE):
            arn = f"arn:aws:scheduler:{self.region}:{self.account}:schedule/default/{self._name(logical_id, 64)}"
            yield self._schedule(logical_id, props, props["Target"], arn)

    def _schedule(
        self, logical_id: str, props: Mapping[str, Any], target: Mapping[str, Any], arn: str
    ) -> Schedule | None:
        try:
            function = self._function_by_reference(target["Arn"])
        except UnsupportedTemplateError:
            return None  # a schedule that invokes something other than our functions
        raw_input = target.get("Input")
        return Schedule(
            logical_id=logical_id,
            expression=self.resolve_str(props["ScheduleExpression"]),
            function=function,
            rule_arn=arn,
            input=None if raw_input is None else self.resolve_str(raw_input),
            enabled=self.resolve(props.get("State", "ENABLED")) == "ENABLED",
        )

    def _api(self, logical_id: str, props: Mapping[str, Any]) -> ApiSpec:
        stages = [
            str(self.resolve(p["StageName"]))
            for _, p in self._resources_of("AWS::ApiGateway::Stage")
            if referenced_id(p.get("RestApiId")) == logical_id
        ]
        stages += [
            str(self.resolve(p["StageName"]))
            for _, p in self._resources_of("AWS::ApiGateway::Deployment")
            if referenced_id(p.get("RestApiId")) == logical_id and "StageName" in p
        ]
        routes = []
        for _, method in self._resources_of("AWS::ApiGateway::Method"):
            integration = method.get("Integration", {})
            if referenced_id(method.get("RestApiId")) != logical_id or integration.get("Type") != "AWS_PROXY":
                continue
            function = next(
                (t for t in _targets(integration.get("Uri")) if self._type_of(t) == _FUNCTION), None
            )
            if function is None:
                raise UnsupportedTemplateError(f"a proxy integration of {logical_id} has no function")
            routes.append(
                Route(
                    method=str(self.resolve(method["HttpMethod"])),
                    resource=self._api_path(method["ResourceId"]),
                    function=function,
                    api_key_required=bool(self.resolve(method.get("ApiKeyRequired", False))),
                )
            )
        return ApiSpec(
            logical_id=logical_id,
            api_id=self.resource(logical_id).ref,
            stage=stages[0] if stages else "prod",
            routes=tuple(routes),
            binary_media_types=tuple(self.resolve(props.get("BinaryMediaTypes", []))),
            limits=self._usage_plan_limits(logical_id),
        )

    def _api_path(self, resource_id: Any) -> str:
        logical_id = referenced_id(resource_id)
        if logical_id is None or self._type_of(logical_id) == _REST_API:
            return "/"
        props = self.template_resources[logical_id]["Properties"]
        parent = self._api_path(props["ParentId"])
        return parent.rstrip("/") + "/" + str(self.resolve(props["PathPart"]))

    def _usage_plan_limits(self, api_logical_id: str) -> UsagePlanLimits:
        for _, plan in self._resources_of("AWS::ApiGateway::UsagePlan"):
            stages = plan.get("ApiStages", [])
            if any(referenced_id(s.get("ApiId")) == api_logical_id for s in stages):
                throttle = self.resolve(plan.get("Throttle", {}))
                return UsagePlanLimits(
                    rate_limit=throttle.get("RateLimit"),
                    burst_limit=throttle.get("BurstLimit"),
                )
        return UsagePlanLimits()

    def _type_of(self, logical_id: str) -> str | None:
        definition = self.template_resources.get(logical_id)
        return None if definition is None else definition.get("Type")

    def _outputs(self) -> dict[str, str]:
        resolved = {}
        for name, output in self.outputs.items():
            try:
                resolved[name] = self.resolve_str(output["Value"])
            except UnsupportedTemplateError:
                continue  # an output about something that does not exist locally
        return resolved


def referenced_id(reference: Any) -> str | None:
    """The logical id a `Ref` or `Fn::GetAtt` points to, without resolving it."""
    if isinstance(reference, dict) and len(reference) == 1:
        ((key, arg),) = reference.items()
        if key == "Ref":
            return str(arg)
        if key == "Fn::GetAtt":
            return str(arg.split(".", 1)[0] if isinstance(arg, str) else arg[0])
    return None


def _targets(value: Any) -> Iterator[str]:
    """Every logical id referenced anywhere inside `value`."""
    target = referenced_id(value)
    if target is not None:
        yield target
    elif isinstance(value, dict):
        for item in value.values():
            yield from _targets(item)
    elif isinstance(value, list):
        for item in value:
            yield from _targets(item)


def _attribute_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def generate_secret_string(spec: Mapping[str, Any]) -> str:
    """A value like Secrets Manager's GenerateSecretString would make, honouring its character rules."""
    alphabet = ""
    if not spec.get("ExcludeLowercase"):
        alphabet += string.ascii_lowercase
    if not spec.get("ExcludeUppercase"):
        alphabet += string.ascii_uppercase
    if not spec.get("ExcludeNumbers"):
        alphabet += string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    if spec.get("IncludeSpace"):
        alphabet += " "
    excluded = set(spec.get("ExcludeCharacters", ""))
    alphabet = "".join(c for c in alphabet if c not in excluded)
    if not alphabet:
        raise UnsupportedTemplateError("GenerateSecretString excludes every character")
    generated = "".join(secrets.choice(alphabet) for _ in range(int(spec.get("PasswordLength", 32))))
    template, key = spec.get("SecretStringTemplate"), spec.get("GenerateStringKey")
    if template is not None and key is not None:
        return json.dumps({**json.loads(template), key: generated})
    return generated


def verify_email_identity(client: Callable[[str], Any], identity: str) -> None:
    """Mark a sender as verified, as the account owner does once in SES (moto may require it to send)."""
    if "@" in identity:
        client("ses").verify_email_identity(EmailAddress=identity)
    else:
        client("ses").verify_domain_identity(Domain=identity)
