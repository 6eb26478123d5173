"""Acknowledging cdk-nag findings (cdk-nag 3: CDK's own `Validations.of(...).acknowledge`).

An acknowledgment covers the construct it is made on and everything below it. Rules that report one
finding per offending value (IAM5) are acknowledged per finding, e.g. ``Resource::<Bucket.Arn>/*``.
"""

from collections.abc import Iterable

from aws_cdk import Acknowledgment, CfnElement, Stack, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str, *, findings: Iterable[str] = ()) -> None:
    ids = [f"{rule}[{finding}]" for finding in findings] or [rule]
    Validations.of(scope).acknowledge(*(Acknowledgment(id=rule_id, reason=reason) for rule_id in ids))


def arn_of(construct: IConstruct) -> str:
    """How cdk-nag names a resource's ARN in a finding: `<LogicalId.Arn>`."""
    resource = construct.node.default_child
    assert isinstance(resource, CfnElement)
    return f"<{Stack.of(construct).resolve(resource.logical_id)}.Arn>"
