"""Alerting: the topic, the alarms that publish to it, and the stack outputs clients read."""

from typing import Any

import pytest

from infra.settings import Settings
from lambdas import config
from tests.infra.cfn import function, logical_id, only, render, resources
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")


def _alarm(template: dict[str, Any], metric_name: str) -> dict[str, Any]:
    (alarm,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == metric_name
    ]
    return alarm


def _dimensions(alarm: dict[str, Any]) -> dict[str, str]:
    return {d["Name"]: render(d["Value"]) for d in alarm["Dimensions"]}


def test_topic_is_encrypted_and_https_only(template: dict[str, Any]) -> None:
    topic_id, topic = only(template, "AWS::SNS::Topic")
    key_id, key = only(template, "AWS::KMS::Key")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    # CloudWatch must be able to use the key, or alarms could not publish to the topic.
    key_statements = key["Properties"]["KeyPolicy"]["Statement"]
    assert any(
        s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
        and {"kms:Decrypt", "kms:GenerateDataKey*"} <= set(s["Action"])
        for s in key_statements
    )
    _, policy = only(template, "AWS::SNS::TopicPolicy")
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_no_email_subscription_by_default(template: dict[str, Any]) -> None:
    assert not resources(template, "AWS::SNS::Subscription")


def test_alert_email_subscribes_to_the_topic(custom_template: dict[str, Any]) -> None:
    topic_id, _ = only(custom_template, "AWS::SNS::Topic")
    _, subscription = only(custom_template, "AWS::SNS::Subscription")
    assert subscription["Properties"] == {
        "Protocol": "email",
        "Endpoint": CUSTOM_CONTEXT["alertEmail"],
        "TopicArn": {"Ref": topic_id},
    }


def test_every_alarm_notifies_the_topic_and_ignores_missing_data(template: dict[str, Any]) -> None:
    topic_id, _ = only(template, "AWS::SNS::Topic")
    alarms = [a["Properties"] for a in resources(template, "AWS::CloudWatch::Alarm").values()]
    assert len(alarms) == 5
    for alarm in alarms:
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["OKActions"] == [{"Ref": topic_id}]
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmDescription"]


def test_alarm_on_messages_left_on_the_dlq(template: dict[str, Any]) -> None:
    dlq_id = logical_id(template, "AWS::SQS::Queue", "DeadLetterQueue")
    alarm = _alarm(template, "ApproximateNumberOfMessagesVisible")
    assert alarm["Namespace"] == "AWS/SQS"
    assert _dimensions(alarm) == {"QueueName": f"QueueName({dlq_id})"}
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0


def test_alarm_on_dead_jobs_uses_the_services_own_metric(template: dict[str, Any]) -> None:
    alarm = _alarm(template, config.METRIC_DEAD)
    assert alarm["Namespace"] == config.METRICS_NAMESPACE
    assert _dimensions(alarm) == {"service": config.SERVICE_NAME}
    assert alarm["Statistic"] == "Sum"
    assert alarm["Period"] == 300
    assert alarm["EvaluationPeriods"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Threshold"] == 1


def test_alarm_on_an_old_backlog(template: dict[str, Any]) -> None:
    queue_id = logical_id(template, "AWS::SQS::Queue", "QueuesQueue")
    alarm = _alarm(template, "ApproximateAgeOfOldestMessage")
    assert _dimensions(alarm) == {"QueueName": f"QueueName({queue_id})"}
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    # Not before a job could legitimately still be waiting: its delay plus every retry's backoff.
    assert alarm["Threshold"] == Settings().longest_retry_span_seconds
    assert (
        alarm["Threshold"]
        > config.MAX_DELAY_SECONDS + config.MAX_ATTEMPTS_LIMIT * config.BACKOFF_BASE_SECONDS
    )


def test_alarm_threshold_follows_the_backoff_context(custom_template: dict[str, Any]) -> None:
    alarm = _alarm(custom_template, "ApproximateAgeOfOldestMessage")
    custom = Settings(
        backoff_base_seconds=CUSTOM_CONTEXT["backoffBaseSeconds"],
        backoff_cap_seconds=CUSTOM_CONTEXT["backoffCapSeconds"],
    )
    assert alarm["Threshold"] == custom.longest_retry_span_seconds != Settings().longest_retry_span_seconds


@pytest.mark.parametrize("metric_name", ["Errors", "Throttles"])
def test_alarm_on_worker_failures(template: dict[str, Any], metric_name: str) -> None:
    worker_id, _ = function(template, "worker")
    alarm = _alarm(template, metric_name)
    assert alarm["Namespace"] == "AWS/Lambda"
    assert _dimensions(alarm) == {"FunctionName": f"Ref({worker_id})"}
    assert alarm["Statistic"] == "Sum"
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Threshold"] == 1


def test_outputs(template: dict[str, Any]) -> None:
    outputs = {name: render(output["Value"]) for name, output in template["Outputs"].items()}
    assert set(outputs) == {
        "ApiUrl",
        "ApiKeyId",
        "QueueUrl",
        "DeadLetterQueueUrl",
        "JobsTableName",
        "DeliveriesTableName",
        "UploadsBucketName",
        "AlertsTopicArn",
    }
    stage_id, _ = only(template, "AWS::ApiGateway::Stage")
    assert outputs["ApiUrl"].startswith("https://Ref(ApiRestApi")
    assert outputs["ApiUrl"].endswith(f"/Ref({stage_id})/")
    assert outputs["ApiKeyId"] == f"Ref({only(template, 'AWS::ApiGateway::ApiKey')[0]})"
    assert outputs["QueueUrl"] == f"Ref({logical_id(template, 'AWS::SQS::Queue', 'QueuesQueue')})"
    assert (
        outputs["DeadLetterQueueUrl"] == f"Ref({logical_id(template, 'AWS::SQS::Queue', 'DeadLetterQueue')})"
    )
    assert outputs["JobsTableName"] == f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'JobsTable')})"
    assert (
        outputs["DeliveriesTableName"] == f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'Deliveries')})"
    )
    assert outputs["UploadsBucketName"] == f"Ref({logical_id(template, 'AWS::S3::Bucket', 'UploadsBucket')})"
    assert outputs["AlertsTopicArn"] == f"Ref({only(template, 'AWS::SNS::Topic')[0]})"
