"""Create the stack's resources from the synthesized CloudFormation template, against any AWS endpoint.

The template is the single definition: queues get the visibility timeout and redrive policy written
there, tables their keys, indexes and TTL, and each function's environment is the template's
`Environment.Variables` with every intrinsic function resolved against what was created. The local
runtime calls this against moto's server; the integration tests call it inside `mock_aws`.

Exactly what `cdk synth` emits for this stack is supported; anything else in the template (a resource
type, a property, an intrinsic function, a condition) raises `UnsupportedTemplateError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import boto3

from lambdas import config
from local_runtime.context import DEFAULT_REGION
from local_runtime.template.intrinsics import Resolver
from local_runtime.template.model import Provisioned, Resource, UnsupportedTemplateError
from local_runtime.template.readers import READ_PROPERTIES, Readers
from local_runtime.template.resources import CREATED_PROPERTIES, NOT_REPRODUCED, Resources

# Template sections: `Rules` only checks the CDK bootstrap version at deploy time.
_SECTIONS = frozenset({"AWSTemplateFormatVersion", "Description", "Metadata", "Parameters", "Rules"})
_SECTIONS_READ = frozenset({"Resources", "Outputs"})
_RESOURCE_KEYS = frozenset(
    {"Type", "Properties", "DependsOn", "Metadata", "DeletionPolicy", "UpdateReplacePolicy"}
)


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
    check_supported(template)
    session = session or boto3.session.Session()
    region = session.region_name or DEFAULT_REGION

    @cache
    def client(service: str) -> Any:
        return session.client(service, region_name=region, endpoint_url=endpoint_url)

    account = client("sts").get_caller_identity()["Account"]
    return _Provisioner(template, client, stack_name, region, account).run()


def check_supported(template: Mapping[str, Any]) -> None:
    """Refuse, before creating anything, what the local runtime would otherwise ignore or get wrong."""
    _refuse(set(template) - _SECTIONS - _SECTIONS_READ, "the template section")
    for logical_id, definition in template.get("Resources", {}).items():
        _refuse(set(definition) - _RESOURCE_KEYS, f"{logical_id}: the resource attribute")
        resource_type = definition["Type"]
        if resource_type in NOT_REPRODUCED:
            continue
        if resource_type in CREATED_PROPERTIES:
            read, without_effect = CREATED_PROPERTIES[resource_type]
            known = read | without_effect
        elif resource_type in READ_PROPERTIES:
            known = READ_PROPERTIES[resource_type]
        else:
            raise UnsupportedTemplateError(
                f"{logical_id}: the resource type {resource_type} is not supported locally"
            )
        properties = set(definition.get("Properties", {}))
        _refuse(properties - known, f"{logical_id}: {resource_type} property")


def _refuse(names: set[str], what: str) -> None:
    if names:
        raise UnsupportedTemplateError(f"{what} {', '.join(sorted(names))} is not supported locally")


class _Provisioner:
    def __init__(
        self,
        template: Mapping[str, Any],
        client: Callable[[str], Any],
        stack_name: str,
        region: str,
        account: str,
    ) -> None:
        self._definitions: Mapping[str, Mapping[str, Any]] = template.get("Resources", {})
        self._outputs: Mapping[str, Mapping[str, Any]] = template.get("Outputs", {})
        self._stack_name = stack_name
        self._region = region
        self._account = account
        pseudo = {
            "AWS::Region": region,
            "AWS::AccountId": account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        self.resolver = Resolver(pseudo, template.get("Parameters", {}), self.resource)
        self._factory = Resources(client, self.resolver, stack_name, region, account)
        self._readers = Readers(self._definitions, self.resource, self.resolver)
        self.created: dict[str, Resource] = {}
        self._creating: set[str] = set()

    def run(self) -> Provisioned:
        for logical_id in self._definitions:
            self.resource(logical_id)
        return Provisioned(
            region=self._region,
            account=self._account,
            stack_name=self._stack_name,
            resources=dict(self.created),
            functions=self._readers.functions(),
            event_source_mappings=self._readers.event_source_mappings(),
            schedules=self._readers.schedules(),
            apis=self._readers.apis(),
            api_keys=self._readers.api_keys(),
            outputs={
                name: self.resolver.resolve_str(output["Value"]) for name, output in self._outputs.items()
            },
        )

    def resource(self, logical_id: str) -> Resource:
        if logical_id in self.created:
            return self.created[logical_id]
        definition = self._definitions.get(logical_id)
        if definition is None:
            raise UnsupportedTemplateError(f"reference to unknown resource {logical_id!r}")
        if logical_id in self._creating:
            raise UnsupportedTemplateError(f"circular reference through {logical_id!r}")
        self._creating.add(logical_id)
        try:
            resource = self._factory.create(logical_id, definition["Type"], definition.get("Properties", {}))
        finally:
            self._creating.discard(logical_id)
        self.created[logical_id] = resource
        return resource
