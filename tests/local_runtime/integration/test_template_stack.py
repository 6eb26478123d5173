"""What the local runtime creates from the real synthesized stack is what the template declares.

Change a queue, table or trigger in infra/ and the local runtime follows; this test fails if
provisioning ever drops or bends a property on the way.
"""

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_runtime.template import Provisioned, provision, referenced_id
from local_runtime.template.model import ScheduleKind


def _of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: definition.get("Properties", {})
        for logical_id, definition in template["Resources"].items()
        if definition["Type"] == resource_type
    }


@pytest.fixture
def provisioned(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Provisioned]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield provision(template)


def test_queues_match_the_template(template: dict[str, Any], provisioned: Provisioned) -> None:
    sqs = boto3.client("sqs")
    queues = _of_type(template, "AWS::SQS::Queue")
    assert queues, "the stack declares queues"
    for logical_id, props in queues.items():
        created = sqs.get_queue_attributes(
            QueueUrl=provisioned.resources[logical_id].ref, AttributeNames=["All"]
        )["Attributes"]
        for name in (
            "VisibilityTimeout",
            "MessageRetentionPeriod",
            "DelaySeconds",
            "ReceiveMessageWaitTimeSeconds",
        ):
            if name in props:
                assert created[name] == str(props[name]), f"{logical_id}.{name}"
        if "RedrivePolicy" in props:
            policy = json.loads(created["RedrivePolicy"])
            dlq = referenced_id(props["RedrivePolicy"]["deadLetterTargetArn"])
            assert policy["maxReceiveCount"] == props["RedrivePolicy"]["maxReceiveCount"]
            assert policy["deadLetterTargetArn"] == provisioned.resources[dlq].attributes["Arn"]


def test_tables_match_the_template(template: dict[str, Any], provisioned: Provisioned) -> None:
    dynamodb = boto3.client("dynamodb")
    tables = _of_type(template, "AWS::DynamoDB::Table")
    assert len(tables) == 5  # jobs, deliveries, webhook secrets, schedules, limits
    for logical_id, props in tables.items():
        name = provisioned.resources[logical_id].ref
        created = dynamodb.describe_table(TableName=name)["Table"]
        assert created["KeySchema"] == props["KeySchema"]
        assert sorted(created["AttributeDefinitions"], key=str) == sorted(
            props["AttributeDefinitions"], key=str
        )
        assert created["DeletionProtectionEnabled"] == props.get("DeletionProtectionEnabled", False)
        assert created["BillingModeSummary"]["BillingMode"] == props.get("BillingMode", "PROVISIONED")
        declared = {
            i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in props.get("GlobalSecondaryIndexes", [])
        }
        actual = {
            i["IndexName"]: (i["KeySchema"], {k: v for k, v in i["Projection"].items() if v})
            for i in created.get("GlobalSecondaryIndexes", [])
        }
        assert actual == declared
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if "TimeToLiveSpecification" in props:
            assert ttl["AttributeName"] == props["TimeToLiveSpecification"]["AttributeName"]
            assert ttl["TimeToLiveStatus"] == "ENABLED"
        backups = dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        pitr = props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False)
        status = backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"]
        assert status == ("ENABLED" if pitr else "DISABLED"), logical_id


def test_bucket_topic_and_secret_exist(template: dict[str, Any], provisioned: Provisioned) -> None:
    s3, sns, secrets = boto3.client("s3"), boto3.client("sns"), boto3.client("secretsmanager")
    for logical_id in _of_type(template, "AWS::S3::Bucket"):
        s3.head_bucket(Bucket=provisioned.resources[logical_id].ref)
    topics = {t["TopicArn"] for t in sns.list_topics()["Topics"]}
    assert {provisioned.resources[i].ref for i in _of_type(template, "AWS::SNS::Topic")} <= topics
    for logical_id in _of_type(template, "AWS::SecretsManager::Secret"):
        assert secrets.get_secret_value(SecretId=provisioned.resources[logical_id].ref)["SecretString"]


def test_triggers_and_functions_match_the_template(
    template: dict[str, Any], provisioned: Provisioned
) -> None:
    mappings = _of_type(template, "AWS::Lambda::EventSourceMapping")
    assert {m.logical_id for m in provisioned.event_source_mappings} == set(mappings)
    for mapping in provisioned.event_source_mappings:
        props = mappings[mapping.logical_id]
        assert mapping.queue == referenced_id(props["EventSourceArn"])
        assert mapping.function == referenced_id(props["FunctionName"])
        assert mapping.batch_size == props.get("BatchSize", 10)
        assert mapping.batching_window_seconds == props.get("MaximumBatchingWindowInSeconds", 0)
        assert mapping.report_batch_item_failures == (
            "ReportBatchItemFailures" in props.get("FunctionResponseTypes", [])
        )
        assert mapping.maximum_concurrency == props.get("ScalingConfig", {}).get("MaximumConcurrency")
    functions = _of_type(template, "AWS::Lambda::Function")
    for logical_id, function in provisioned.functions.items():
        assert function.timeout_seconds == functions[logical_id]["Timeout"]
        assert set(function.environment) == set(functions[logical_id]["Environment"]["Variables"])
    (schedule,) = [s for s in provisioned.schedules if s.kind is ScheduleKind.RULE]
    (rule,) = [r for r in _of_type(template, "AWS::Events::Rule").values() if "ScheduleExpression" in r]
    assert schedule.expression == rule["ScheduleExpression"]
    assert schedule.function == referenced_id(rule["Targets"][0]["Arn"])
    # The schedules function's minute tick: an EventBridge Scheduler schedule, emulated as declared.
    (tick,) = [s for s in provisioned.schedules if s.kind is ScheduleKind.SCHEDULER]
    (declared,) = _of_type(template, "AWS::Scheduler::Schedule").values()
    assert (tick.expression, tick.input) == (declared["ScheduleExpression"], declared["Target"]["Input"])
    assert tick.function == referenced_id(declared["Target"]["Arn"])
    assert tick.time_zone == declared.get("ScheduleExpressionTimezone", "UTC")
    assert provisioned.functions[tick.function].handler == "lambdas.handlers.schedules.handler"
