"""The four functions: runtime, packaging, roles, environment and what each one may do."""

from typing import Any

import pytest

from lambdas import config
from tests.infra.cfn import function, grants, render, resources, role_statements
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")

ENTRY_POINTS = ("api", "worker", "dead_letter", "recovery")
POWERTOOLS = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}
JOBS_TABLE = {config.ENV_JOBS_TABLE, config.ENV_STATUS_SHARDS, config.ENV_FINISHED_TTL_DAYS}


def _props(template: dict[str, Any], entry_point: str) -> dict[str, Any]:
    return function(template, entry_point)[1]["Properties"]


def _env(template: dict[str, Any], entry_point: str) -> dict[str, Any]:
    variables: dict[str, Any] = _props(template, entry_point)["Environment"]["Variables"]
    return variables


def _grants(template: dict[str, Any], entry_point: str) -> set[tuple[str, str]]:
    return grants(role_statements(template, _props(template, entry_point)["Role"]))


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_function_runs_python_3_14_on_arm64_with_tracing(template: dict[str, Any], entry_point: str) -> None:
    props = _props(template, entry_point)
    assert props["Runtime"] == "python3.14"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    env = _env(template, entry_point)
    assert env["POWERTOOLS_SERVICE_NAME"] == config.SERVICE_NAME
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == config.METRICS_NAMESPACE
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_function_logs_to_its_own_log_group_with_retention(
    template: dict[str, Any], entry_point: str
) -> None:
    log_group_id = _props(template, entry_point)["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = template["Resources"][log_group_id]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == 30
    assert ("logs:PutLogEvents", f"Arn({log_group_id})") in _grants(template, entry_point)


def test_all_functions_share_one_code_asset(template: dict[str, Any]) -> None:
    codes = [_props(template, entry_point)["Code"] for entry_point in ENTRY_POINTS]
    assert len(resources(template, "AWS::Lambda::Function")) == len(ENTRY_POINTS)
    assert all(code == codes[0] for code in codes)
    assert codes[0]["S3Key"].endswith(".zip")


def test_each_function_has_its_own_role_without_managed_policies(template: dict[str, Any]) -> None:
    roles = [_props(template, entry_point)["Role"]["Fn::GetAtt"][0] for entry_point in ENTRY_POINTS]
    assert len(set(roles)) == len(ENTRY_POINTS)
    for role_id in roles:
        role = template["Resources"][role_id]["Properties"]
        assert "ManagedPolicyArns" not in role
        (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "lambda.amazonaws.com"}


def test_timeouts(template: dict[str, Any]) -> None:
    assert _props(template, "worker")["Timeout"] == config.WORKER_TIMEOUT_SECONDS
    assert _props(template, "recovery")["Timeout"] == config.RECOVERY_TIMEOUT_SECONDS
    # API Gateway gives up after 29 s.
    assert _props(template, "api")["Timeout"] < 29


def test_api_environment(template: dict[str, Any]) -> None:
    env = _env(template, "api")
    assert set(env) == POWERTOOLS | JOBS_TABLE | {
        config.ENV_QUEUE_URL,
        config.ENV_UPLOADS_BUCKET,
        config.ENV_MAX_FILE_BYTES,
        config.ENV_ALLOW_HTTP_WEBHOOKS,
    }
    assert render(env[config.ENV_JOBS_TABLE]).startswith("Ref(TablesJobsTable")
    assert render(env[config.ENV_QUEUE_URL]).startswith("Ref(QueuesQueue")
    assert render(env[config.ENV_UPLOADS_BUCKET]).startswith("Ref(StorageUploadsBucket")
    assert env[config.ENV_STATUS_SHARDS] == str(config.STATUS_SHARDS)
    assert env[config.ENV_FINISHED_TTL_DAYS] == str(config.FINISHED_TTL_DAYS)
    # The submission checks apply the worker's limits: an http:// webhook refused at submission but
    # allowed at delivery (or the reverse) would make allowHttpWebhooks half work.
    worker = _env(template, "worker")
    assert env[config.ENV_MAX_FILE_BYTES] == worker[config.ENV_MAX_FILE_BYTES]
    assert env[config.ENV_ALLOW_HTTP_WEBHOOKS] == worker[config.ENV_ALLOW_HTTP_WEBHOOKS] == "false"


def test_worker_environment(template: dict[str, Any]) -> None:
    env = _env(template, "worker")
    assert set(env) == POWERTOOLS | JOBS_TABLE | {
        config.ENV_DELIVERIES_TABLE,
        config.ENV_QUEUE_URL,
        config.ENV_DLQ_URL,
        config.ENV_UPLOADS_BUCKET,
        config.ENV_WEBHOOK_SECRET_ARN,
        config.ENV_SENDER_EMAIL,
        config.ENV_BACKOFF_BASE_SECONDS,
        config.ENV_BACKOFF_CAP_SECONDS,
        config.ENV_LEASE_SECONDS,
        config.ENV_WORKER_CONCURRENCY,
        config.ENV_THUMBNAIL_SIZES,
        config.ENV_MAX_FILE_BYTES,
        config.ENV_ALLOW_HTTP_WEBHOOKS,
    }
    assert render(env[config.ENV_DELIVERIES_TABLE]).startswith("Ref(TablesDeliveriesTable")
    assert render(env[config.ENV_DLQ_URL]).startswith("Ref(QueuesDeadLetterQueue")
    assert render(env[config.ENV_WEBHOOK_SECRET_ARN]).startswith("Ref(StorageWebhookSigningSecret")
    assert env[config.ENV_SENDER_EMAIL] == "no-reply@example.com"
    assert env[config.ENV_BACKOFF_BASE_SECONDS] == str(config.BACKOFF_BASE_SECONDS)
    assert env[config.ENV_BACKOFF_CAP_SECONDS] == str(config.BACKOFF_CAP_SECONDS)
    assert env[config.ENV_LEASE_SECONDS] == str(config.LEASE_SECONDS)
    assert env[config.ENV_WORKER_CONCURRENCY] == str(config.WORKER_CONCURRENCY)
    assert env[config.ENV_THUMBNAIL_SIZES] == ",".join(map(str, config.THUMBNAIL_SIZES))
    assert env[config.ENV_MAX_FILE_BYTES] == str(config.MAX_FILE_BYTES)
    assert env[config.ENV_ALLOW_HTTP_WEBHOOKS] == "false"


def test_worker_environment_follows_context(custom_template: dict[str, Any]) -> None:
    env = _env(custom_template, "worker")
    assert env[config.ENV_SENDER_EMAIL] == CUSTOM_CONTEXT["senderEmail"]
    assert env[config.ENV_BACKOFF_BASE_SECONDS] == str(CUSTOM_CONTEXT["backoffBaseSeconds"])
    assert env[config.ENV_BACKOFF_CAP_SECONDS] == str(CUSTOM_CONTEXT["backoffCapSeconds"])
    assert env[config.ENV_THUMBNAIL_SIZES] == "64,256,1024"
    assert env[config.ENV_ALLOW_HTTP_WEBHOOKS] == "true"
    assert _env(custom_template, "api")[config.ENV_ALLOW_HTTP_WEBHOOKS] == "true"


def test_dead_letter_environment(template: dict[str, Any]) -> None:
    env = _env(template, "dead_letter")
    assert set(env) == POWERTOOLS | JOBS_TABLE | {config.ENV_ALERTS_TOPIC_ARN}
    assert render(env[config.ENV_ALERTS_TOPIC_ARN]).startswith("Ref(AlertsAlertsTopic")


def test_recovery_environment(template: dict[str, Any]) -> None:
    env = _env(template, "recovery")
    assert set(env) == POWERTOOLS | JOBS_TABLE | {config.ENV_QUEUE_URL, config.ENV_RECOVERY_GRACE_SECONDS}
    assert env[config.ENV_RECOVERY_GRACE_SECONDS] == str(config.RECOVERY_GRACE_SECONDS)


def _targets(pairs: set[tuple[str, str]], action: str) -> set[str]:
    return {resource for granted, resource in pairs if granted == action}


def _object_keys(pairs: set[tuple[str, str]], action: str) -> set[str]:
    """Key patterns in the uploads bucket the action is granted on (the bucket ARN itself left out)."""
    return {
        target.split(")/", 1)[1]
        for target in _targets(pairs, action)
        if target.startswith("Arn(StorageUploadsBucket") and ")/" in target
    }


def _on(pairs: set[tuple[str, str]], resource_prefix: str) -> set[str]:
    return {action for action, resource in pairs if resource.startswith(resource_prefix)}


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_every_function_reads_and_writes_job_records(template: dict[str, Any], entry_point: str) -> None:
    on_jobs = _on(_grants(template, entry_point), "Arn(TablesJobsTable")
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} <= on_jobs


def test_api_may_enqueue_and_presign_uploads_only(template: dict[str, Any]) -> None:
    pairs = _grants(template, "api")
    assert _on(pairs, "Arn(QueuesQueue") == {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
    assert _object_keys(pairs, "s3:PutObject") == {"uploads/*"}
    assert _object_keys(pairs, "s3:GetObject*") == {"uploads/*"}
    assert not _object_keys(pairs, "s3:DeleteObject*")
    assert not _on(pairs, "Arn(QueuesDeadLetterQueue")
    assert not _on(pairs, "Arn(TablesDeliveriesTable")
    assert not any(action.startswith(("sns:", "ses:", "secretsmanager:")) for action, _ in pairs)


def test_worker_permissions(template: dict[str, Any]) -> None:
    pairs = _grants(template, "worker")
    on_queue = _on(pairs, "Arn(QueuesQueue")
    assert {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:SendMessage",
    } <= on_queue
    assert "sqs:SendMessage" in _on(pairs, "Arn(QueuesDeadLetterQueue")
    assert {"dynamodb:PutItem", "dynamodb:UpdateItem"} <= _on(pairs, "Arn(TablesDeliveriesTable")
    assert "dynamodb:GetItem" not in _on(pairs, "Arn(TablesDeliveriesTable")
    assert _object_keys(pairs, "s3:GetObject*") == {"uploads/*", "results/*"}
    assert _object_keys(pairs, "s3:PutObject") == {"results/*"}
    assert _object_keys(pairs, "s3:DeleteObject*") == {"results/*"}
    assert {"secretsmanager:GetSecretValue"} <= _on(pairs, "Ref(StorageWebhookSigningSecret")


def test_worker_may_send_email_only_as_the_sender(template: dict[str, Any]) -> None:
    statements = role_statements(template, _props(template, "worker")["Role"])
    (ses,) = [s for s in statements if s["Action"] == "ses:SendEmail"]
    assert ses["Condition"] == {"StringEquals": {"ses:FromAddress": "no-reply@example.com"}}
    identities = sorted(render(r) for r in ses["Resource"])
    assert [i.rsplit(":", 1)[1] for i in identities] == [
        "identity/example.com",
        "identity/no-reply@example.com",
    ]
    assert all(":ses:Ref(AWS::Region):Ref(AWS::AccountId):identity/" in i for i in identities)


def test_dead_letter_permissions(template: dict[str, Any]) -> None:
    pairs = _grants(template, "dead_letter")
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage"} <= _on(pairs, "Arn(QueuesDeadLetterQueue")
    assert not _on(pairs, "Arn(QueuesQueue")
    (topic,) = _targets(pairs, "sns:Publish")
    assert topic.startswith("Ref(AlertsAlertsTopic")
    assert "kms:GenerateDataKey*" in _on(pairs, "Arn(AlertsAlertsKey")


def test_recovery_permissions(template: dict[str, Any]) -> None:
    pairs = _grants(template, "recovery")
    assert _on(pairs, "Arn(QueuesQueue") == {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
    assert not any(action.startswith(("s3:", "sns:", "ses:", "secretsmanager:")) for action, _ in pairs)
