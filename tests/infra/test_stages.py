"""CDK context `stage` puts the stage in every name the account or region sees, so dev, staging and prod
deploy side by side; no stage keeps today's names."""

import json
from typing import Any

import pytest

from infra.synth import synthesize
from lambdas import config

# The properties that name a resource in the account or region (CloudFormation generates a name from
# the stack's where one is left out), and what else two stacks could share: exports, metric namespaces.
NAME_PROPERTIES = {
    "AWS::CloudWatch::Alarm": ("AlarmName", "Namespace"),
    "AWS::CloudWatch::Dashboard": ("DashboardName",),
    "AWS::Lambda::Function": ("FunctionName",),
    "AWS::SQS::Queue": ("QueueName",),
    "AWS::DynamoDB::Table": ("TableName",),
    "AWS::SNS::Topic": ("TopicName",),
    "AWS::SecretsManager::Secret": ("Name",),
    "AWS::SSM::Parameter": ("Name",),
    "AWS::IAM::Role": ("RoleName",),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName",),
    "AWS::Logs::LogGroup": ("LogGroupName",),
    "AWS::Scheduler::ScheduleGroup": ("Name",),
    "AWS::Scheduler::Schedule": ("Name",),
    "AWS::S3::Bucket": ("BucketName",),
    "AWS::KMS::Alias": ("AliasName",),
    "AWS::ApiGateway::ApiKey": ("Name",),
    "AWS::ApiGateway::UsagePlan": ("UsagePlanName",),
}


def _names(template: dict[str, Any]) -> set[str]:
    found = set()
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        for name in NAME_PROPERTIES.get(resource["Type"], ()):
            if name in properties and not str(properties[name]).startswith("AWS/"):
                found.add(json.dumps(properties[name], sort_keys=True))
        environment = properties.get("Environment", {}).get("Variables", {})
        if "POWERTOOLS_METRICS_NAMESPACE" in environment:
            found.add(environment["POWERTOOLS_METRICS_NAMESPACE"])
    for output in template.get("Outputs", {}).values():
        if "Export" in output:
            found.add(json.dumps(output["Export"]["Name"], sort_keys=True))
    return found


def test_two_stages_share_no_name_and_carry_their_stage() -> None:
    """Seen to fail with `build_app` ignoring the stage (every alarm, the dashboard and the metrics
    namespace shared), and with the functions' POWERTOOLS_METRICS_NAMESPACE left at `Offload` (staging's
    deaths would fire prod's alarm)."""
    staging, prod = synthesize({"stage": "staging"}), synthesize({"stage": "prod"})

    assert not _names(staging) & _names(prod)
    alarms = [r["Properties"] for r in staging["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    assert alarms
    assert all(a["AlarmName"].startswith("Offload-staging-") for a in alarms)
    assert {a["Namespace"] for a in alarms if not a.get("Namespace", "AWS/").startswith("AWS/")} == {
        "Offload-staging"
    }
    assert staging["Description"].startswith("offload (staging):")


def test_no_stage_keeps_todays_names(template: dict[str, Any]) -> None:
    alarms = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    assert all(a["AlarmName"].startswith(f"{config.STACK_ID}-") for a in alarms)
    assert f'"{config.METRICS_NAMESPACE}"' in json.dumps(template)


@pytest.mark.parametrize("stage", ["Prod", "a b", "x" * 17, "-dev"])
def test_a_stage_name_that_cannot_be_in_a_name_fails_the_synth(stage: str) -> None:
    with pytest.raises(ValueError, match="stage must match"):
        synthesize({"stage": stage})
