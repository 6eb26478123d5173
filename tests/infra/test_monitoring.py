"""Alerting: the topic, the alarms that publish to it, and the stack outputs clients read."""

from typing import Any

import pytest

from infra.settings import Settings
from lambdas import config
from tests.infra.cfn import function, logical_id, only, render, resources
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")


def _alarm(template: dict[str, Any], metric_name: str, **dimensions: str) -> dict[str, Any]:
    (alarm,) = [
        a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == metric_name
        and dimensions.items() <= _dimensions(a["Properties"]).items()
    ]
    return alarm


def _dimensions(alarm: dict[str, Any]) -> dict[str, str]:
    return {d["Name"]: render(d["Value"]) for d in alarm["Dimensions"]}


def test_topic_is_encrypted_and_https_only(template: dict[str, Any]) -> None:
    topic_id, topic = only(template, "AWS::SNS::Topic")
    key_id, key = only(template, "AWS::KMS::Key")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    # CloudWatch must be able to use the key, or alarms could not publish to the topic; but only for this
    # account's alarms of this stack (no confused deputy).
    (cloudwatch,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert set(cloudwatch["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    assert cloudwatch["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    allowed = {render(arn) for arn in cloudwatch["Condition"]["ArnEquals"]["aws:SourceArn"]}
    names = {a["Properties"]["AlarmName"] for a in resources(template, "AWS::CloudWatch::Alarm").values()}
    prefix = "arn:Ref(AWS::Partition):cloudwatch:Ref(AWS::Region):Ref(AWS::AccountId):alarm:"
    assert allowed == {prefix + name for name in names}
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


def test_every_alarm_notifies_the_topic(template: dict[str, Any]) -> None:
    topic_id, _ = only(template, "AWS::SNS::Topic")
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in resources(template, "AWS::CloudWatch::Alarm").values()
    }
    # Five of them per worker group beyond the shared worker (process_file's): errors, throttles,
    # its queue's and its high queue's backlog, and its DLQ.
    assert len(alarms) == 16
    for name, alarm in alarms.items():
        assert name.startswith(f"{config.STACK_ID}-")
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["OKActions"] == [{"Ref": topic_id}]
        assert alarm["AlarmDescription"]
        # No data means no messages or invocations, except for the heartbeat, whose silence is the alarm.
        heartbeat = alarm["MetricName"] == config.METRIC_SWEEPS
        assert alarm["TreatMissingData"] == ("breaching" if heartbeat else "notBreaching")


def test_alarm_on_messages_left_on_each_dlq(template: dict[str, Any]) -> None:
    dlqs = [lid for lid in resources(template, "AWS::SQS::Queue") if "DeadLetterQueue" in lid]
    assert len(dlqs) == 2
    for dlq_id in dlqs:
        alarm = _alarm(template, "ApproximateNumberOfMessagesVisible", QueueName=f"QueueName({dlq_id})")
        assert alarm["Namespace"] == "AWS/SQS"
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
    alarm = _alarm(template, "ApproximateAgeOfOldestMessage", QueueName=f"QueueName({queue_id})")
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    # Not before a job could legitimately still be waiting: its delay plus every retry's wait, which a
    # receiver's Retry-After may stretch to the largest one honoured.
    assert alarm["Threshold"] == Settings().longest_retry_span_seconds
    assert alarm["Threshold"] >= (
        config.MAX_DELAY_SECONDS + config.MAX_ATTEMPTS_LIMIT * config.MAX_RETRY_AFTER_SECONDS
    )


def test_a_group_queues_backlog_alarm_allows_for_its_workers_timeout(template: dict[str, Any]) -> None:
    """process_file's queue: every attempt may take its worker's 180 s. Seen to fail with the shared
    worker's span on every queue."""
    from lambdas.jobs.types.process_file import PROCESS_FILE_TIMEOUT_SECONDS

    (queue_id,) = [lid for lid in resources(template, "AWS::SQS::Queue") if lid.startswith("QueuesQueue180s")]
    alarm = _alarm(template, "ApproximateAgeOfOldestMessage", QueueName=f"QueueName({queue_id})")
    assert alarm["Threshold"] == Settings().retry_span_seconds(PROCESS_FILE_TIMEOUT_SECONDS)
    assert alarm["Threshold"] > Settings().longest_retry_span_seconds


def test_alarm_threshold_follows_the_backoff_context(custom_template: dict[str, Any]) -> None:
    queue_id = logical_id(custom_template, "AWS::SQS::Queue", "QueuesQueue")
    alarm = _alarm(custom_template, "ApproximateAgeOfOldestMessage", QueueName=f"QueueName({queue_id})")
    custom = Settings(
        backoff_base_seconds=CUSTOM_CONTEXT["backoffBaseSeconds"],
        backoff_cap_seconds=CUSTOM_CONTEXT["backoffCapSeconds"],
    )
    assert alarm["Threshold"] == custom.longest_retry_span_seconds
    # Backoff windows longer than the largest Retry-After lengthen the legitimate life of a message.
    slow = Settings(backoff_base_seconds=600, backoff_cap_seconds=2 * config.MAX_RETRY_AFTER_SECONDS)
    assert slow.longest_retry_span_seconds > Settings().longest_retry_span_seconds


@pytest.mark.parametrize(
    ("entry_point", "metric_name"),
    [("worker", "Errors"), ("worker", "Throttles"), ("dead_letter", "Errors"), ("recovery", "Errors")],
)
def test_alarm_on_function_failures(template: dict[str, Any], entry_point: str, metric_name: str) -> None:
    function_id, _ = function(template, entry_point)
    alarm = _alarm(template, metric_name, FunctionName=f"Ref({function_id})")
    assert alarm["Namespace"] == "AWS/Lambda"
    assert _dimensions(alarm) == {"FunctionName": f"Ref({function_id})"}
    assert alarm["Statistic"] == "Sum"
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Threshold"] == 1


def test_alarm_when_no_recovery_sweep_finishes_for_three_periods(template: dict[str, Any]) -> None:
    alarm = _alarm(template, config.METRIC_SWEEPS)
    assert alarm["Namespace"] == config.METRICS_NAMESPACE
    assert _dimensions(alarm) == {"service": config.SERVICE_NAME}
    assert alarm["Statistic"] == "Sum"
    assert alarm["Period"] * alarm["EvaluationPeriods"] == 3 * config.RECOVERY_RATE_MINUTES * 60
    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    assert alarm["Threshold"] == 1
    assert alarm["TreatMissingData"] == "breaching"


def test_sweep_alarm_follows_the_recovery_rate(custom_template: dict[str, Any]) -> None:
    alarm = _alarm(custom_template, config.METRIC_SWEEPS)
    assert alarm["Period"] * alarm["EvaluationPeriods"] == 3 * CUSTOM_CONTEXT["recoveryRateMinutes"] * 60


def test_alarm_on_the_api_5xx_rate(template: dict[str, Any]) -> None:
    stage_id, _ = only(template, "AWS::ApiGateway::Stage")
    alarm = _alarm(template, "5XXError")
    assert alarm["Namespace"] == "AWS/ApiGateway"
    assert _dimensions(alarm)["Stage"] == f"Ref({stage_id})"
    # 5XXError is 0 or 1 per request, so its average is the share of requests that failed.
    assert alarm["Statistic"] == "Average"
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert 0 < alarm["Threshold"] <= 0.05


def test_outputs(template: dict[str, Any]) -> None:
    outputs = {name: render(output["Value"]) for name, output in template["Outputs"].items()}
    assert set(outputs) == {
        "ApiUrl",
        "ApiKeyId",
        "ApiKeyIdDefault",
        "OperatorKeyId",
        "QueueUrl",
        "DeadLetterQueueUrl",
        "QueueUrl180s1024MB",  # process_file's worker's queues
        "DeadLetterQueueUrl180s1024MB",
        "JobsTableName",
        "DeliveriesTableName",
        "WebhookSecretsTableName",
        "LimitsTableName",
        "UploadsBucketName",
        "AlertsTopicArn",
        "WebhookSigningSecretArn",
        "DashboardUrl",
    }
    stage_id, _ = only(template, "AWS::ApiGateway::Stage")
    assert outputs["ApiUrl"].startswith("https://Ref(ApiRestApi")
    assert outputs["ApiUrl"].endswith(f"/Ref({stage_id})/")
    assert outputs["ApiKeyId"] == outputs["ApiKeyIdDefault"]  # each key's outputs: tests/infra/test_keys.py
    assert outputs["QueueUrl"] == f"Ref({logical_id(template, 'AWS::SQS::Queue', 'QueuesQueue')})"
    assert (
        outputs["DeadLetterQueueUrl"] == f"Ref({logical_id(template, 'AWS::SQS::Queue', 'DeadLetterQueue')})"
    )
    assert outputs["JobsTableName"] == f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'JobsTable')})"
    assert (
        outputs["DeliveriesTableName"] == f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'Deliveries')})"
    )
    assert outputs["WebhookSecretsTableName"] == (
        f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'WebhookSecrets')})"
    )
    assert outputs["LimitsTableName"] == f"Ref({logical_id(template, 'AWS::DynamoDB::Table', 'LimitsTable')})"
    assert outputs["UploadsBucketName"] == f"Ref({logical_id(template, 'AWS::S3::Bucket', 'UploadsBucket')})"
    assert outputs["AlertsTopicArn"] == f"Ref({only(template, 'AWS::SNS::Topic')[0]})"
    secret_id, _ = only(template, "AWS::SecretsManager::Secret")
    assert outputs["WebhookSigningSecretArn"] == f"Ref({secret_id})"
