"""The stack's stateful resources created in moto (queues, tables, the bucket, the topic, the secret).

Each creator reads the properties that change what the functions see, and names the ones that have no
local effect (encryption, access policies, logging); any other property is `UnsupportedTemplateError`,
so a property added to the stack is either reproduced here or refused, never silently dropped.
Resources that are not reproduced locally (roles, alarms, policies, API Gateway's plumbing) get a
physical id so references to them resolve; reading an attribute of theirs that cannot be known locally
is an error rather than a made-up value.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable, Mapping
from typing import Any

from local_runtime.template import model
from local_runtime.template.intrinsics import Resolver
from local_runtime.template.model import Resource, UnsupportedTemplateError

Creator = Callable[[str, Mapping[str, Any]], Resource]

# Per created type: the properties read, then those without a local effect (moto neither encrypts,
# enforces policies nor keeps backups).
CREATED_PROPERTIES: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    model.QUEUE: (
        frozenset({"VisibilityTimeout", "MessageRetentionPeriod", "RedrivePolicy"}),
        frozenset({"SqsManagedSseEnabled"}),
    ),
    model.TABLE: (
        frozenset(
            {
                "KeySchema",
                "AttributeDefinitions",
                "BillingMode",
                "GlobalSecondaryIndexes",
                "TimeToLiveSpecification",
                "PointInTimeRecoverySpecification",
                "DeletionProtectionEnabled",
            }
        ),
        frozenset({"SSESpecification"}),
    ),
    model.BUCKET: (
        frozenset(),
        frozenset(
            {
                "BucketEncryption",
                "LifecycleConfiguration",  # local state lives only as long as the runtime
                "LoggingConfiguration",
                "OwnershipControls",
                "PublicAccessBlockConfiguration",
            }
        ),
    ),
    model.TOPIC: (frozenset(), frozenset({"KmsMasterKeyId"})),
    model.SECRET: (frozenset({"GenerateSecretString"}), frozenset({"Description", "Tags"})),
}

# Types that exist only for permissions, monitoring or API Gateway's own bookkeeping.
NOT_REPRODUCED = frozenset(
    {
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::KMS::Key",
        "AWS::Logs::LogGroup",
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::Lambda::Permission",
        "AWS::S3::BucketPolicy",
        "AWS::SNS::TopicPolicy",
        "AWS::SNS::Subscription",  # the alert e-mail (context alertEmail): nothing is mailed locally
        "AWS::SQS::QueuePolicy",
        "AWS::ApiGateway::Model",
        "AWS::ApiGateway::RequestValidator",
        "AWS::ApiGateway::UsagePlanKey",
        # A group only names its schedules (AWS::Scheduler::Schedule is read: local_runtime/scheduler.py).
        "AWS::Scheduler::ScheduleGroup",
    }
)


class Resources:
    """Creates one resource of the template in the endpoint the `client` factory talks to."""

    def __init__(
        self,
        client: Callable[[str], Any],
        resolver: Resolver,
        stack_name: str,
        region: str,
        account: str,
    ) -> None:
        self._client = client
        self._resolver = resolver
        self._stack_name = stack_name
        self._region = region
        self._account = account
        self._creators: dict[str, Creator] = {
            model.QUEUE: self._queue,
            model.TABLE: self._table,
            model.BUCKET: self._bucket,
            model.TOPIC: self._topic,
            model.SECRET: self._secret,
        }

    def create(self, logical_id: str, resource_type: str, props: Mapping[str, Any]) -> Resource:
        creator = self._creators.get(resource_type)
        if creator is None:
            return self._placeholder(logical_id, resource_type, props)
        read, _ = CREATED_PROPERTIES[resource_type]
        return creator(logical_id, {k: self._resolver.resolve(v) for k, v in props.items() if k in read})

    def name(self, logical_id: str, max_length: int) -> str:
        return f"{self._stack_name}-{logical_id}"[:max_length]

    def _queue(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        attributes = {k: str(v) for k, v in props.items() if k != "RedrivePolicy"}
        if "RedrivePolicy" in props:
            attributes["RedrivePolicy"] = json.dumps(props["RedrivePolicy"])
        sqs = self._client("sqs")
        name = self.name(logical_id, 80)
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return Resource(logical_id, model.QUEUE, url, {"Arn": arn, "QueueName": name, "QueueUrl": url})

    def _table(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        if props.get("BillingMode") != "PAY_PER_REQUEST":
            raise UnsupportedTemplateError(
                f"{logical_id}: only BillingMode PAY_PER_REQUEST is supported locally"
            )
        name = self.name(logical_id, 255)
        request: dict[str, Any] = {
            "TableName": name,
            "KeySchema": props["KeySchema"],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "BillingMode": "PAY_PER_REQUEST",
            # moto refuses DeleteTable on a protected table, as DynamoDB does.
            "DeletionProtectionEnabled": bool(props.get("DeletionProtectionEnabled", False)),
        }
        if props.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = [
                {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
                for index in props["GlobalSecondaryIndexes"]
            ]
        dynamodb = self._client("dynamodb")
        arn = dynamodb.create_table(**request)["TableDescription"]["TableArn"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        if props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled"):
            dynamodb.update_continuous_backups(
                TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
            )
        return Resource(logical_id, model.TABLE, name, {"Arn": arn})

    def _bucket(self, logical_id: str, _props: Mapping[str, Any]) -> Resource:
        name = re.sub(r"[^a-z0-9-]", "-", self.name(logical_id, 63).lower())
        if self._region == "us-east-1":
            self._client("s3").create_bucket(Bucket=name)
        else:
            self._client("s3").create_bucket(
                Bucket=name, CreateBucketConfiguration={"LocationConstraint": self._region}
            )
        return Resource(
            logical_id,
            model.BUCKET,
            name,
            {
                "Arn": f"arn:aws:s3:::{name}",
                "DomainName": f"{name}.s3.amazonaws.com",
                "RegionalDomainName": f"{name}.s3.{self._region}.amazonaws.com",
            },
        )

    def _topic(self, logical_id: str, _props: Mapping[str, Any]) -> Resource:
        name = self.name(logical_id, 256)
        arn = self._client("sns").create_topic(Name=name)["TopicArn"]
        return Resource(logical_id, model.TOPIC, arn, {"TopicArn": arn, "TopicName": name})

    def _secret(self, logical_id: str, props: Mapping[str, Any]) -> Resource:
        value = generate_secret_string(props.get("GenerateSecretString", {}))
        arn = self._client("secretsmanager").create_secret(
            Name=self.name(logical_id, 512), SecretString=value
        )["ARN"]
        return Resource(logical_id, model.SECRET, arn, {"Id": arn})

    def _placeholder(self, logical_id: str, resource_type: str, props: Mapping[str, Any]) -> Resource:
        """A resource that is not created locally: only its name and, for some types, its ARN."""
        name = self.name(logical_id, 64)
        if resource_type == model.FUNCTION:
            arn = f"arn:aws:lambda:{self._region}:{self._account}:function:{name}"
            return Resource(logical_id, resource_type, name, {"Arn": arn})
        if resource_type in (model.FUNCTION_VERSION, model.FUNCTION_ALIAS):
            # Ref of either is an ARN qualified by the version or the alias name: the local runtime
            # keeps no versions, so a version is `1` and an alias runs its function (readers.py).
            function = self._resolver.resolve_str(props["FunctionName"])
            qualifier = (
                "1" if resource_type == model.FUNCTION_VERSION else self._resolver.resolve_str(props["Name"])
            )
            arn = f"arn:aws:lambda:{self._region}:{self._account}:function:{function}:{qualifier}"
            attributes = {"Version": "1"} if resource_type == model.FUNCTION_VERSION else {"AliasArn": arn}
            return Resource(logical_id, resource_type, arn, attributes)
        if resource_type == model.RULE:
            arn = f"arn:aws:events:{self._region}:{self._account}:rule/{name}"
            return Resource(logical_id, resource_type, name, {"Arn": arn})
        if resource_type == model.SCHEDULER_SCHEDULE:
            group = self._resolver.resolve_str(props.get("GroupName", "default"))
            arn = f"arn:aws:scheduler:{self._region}:{self._account}:schedule/{group}/{name}"
            return Resource(logical_id, resource_type, name, {"Arn": arn})
        if resource_type == model.REST_API:
            api_id = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(10))
            return Resource(logical_id, resource_type, api_id, {"RootResourceId": f"{logical_id}-root"})
        if resource_type == model.API_STAGE:
            return Resource(logical_id, resource_type, self._resolver.resolve_str(props["StageName"]))
        return Resource(logical_id, resource_type, name)


_SECRET_RULES = frozenset({"PasswordLength", "ExcludePunctuation", "IncludeSpace"})


def generate_secret_string(spec: Mapping[str, Any]) -> str:
    """A value like Secrets Manager's GenerateSecretString makes, for the rules the stack sets."""
    unsupported = set(spec) - _SECRET_RULES
    if unsupported:
        raise UnsupportedTemplateError(f"GenerateSecretString {sorted(unsupported)} is not supported locally")
    alphabet = string.ascii_letters + string.digits
    if not spec.get("ExcludePunctuation"):
        alphabet += "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
    if spec.get("IncludeSpace"):
        alphabet += " "
    return "".join(secrets.choice(alphabet) for _ in range(int(spec.get("PasswordLength", 32))))


def verify_email_identity(client: Callable[[str], Any], identity: str) -> None:
    """Mark a sender as verified, as the account owner does once in SES (moto may require it to send)."""
    if "@" in identity:
        client("ses").verify_email_identity(EmailAddress=identity)
    else:
        client("ses").verify_domain_identity(Domain=identity)
