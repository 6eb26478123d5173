"""provision(): the resources created in moto are the template's, and function environments resolve.

The template here is small and hand-written in the shape `cdk synth` emits, so the intrinsic functions
and property mappings are exercised one by one; test_local_provision_stack.py does the same against the
real synthesized stack.
"""

import json

import boto3
import pytest
from moto import mock_aws

from local_runtime.provision import Provisioned, UnsupportedTemplateError, provision

TEMPLATE = {
    "Parameters": {"BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk/v"}},
    "Conditions": {"IsLocal": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}},
    "Resources": {
        "Dlq": {"Type": "AWS::SQS::Queue", "Properties": {"MessageRetentionPeriod": 1209600}},
        "Queue": {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "VisibilityTimeout": 360,
                "MessageRetentionPeriod": 345600,
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": ["Dlq", "Arn"]},
                    "maxReceiveCount": 15,
                },
            },
        },
        "Jobs": {
            "Type": "AWS::DynamoDB::GlobalTable",
            "Properties": {
                "AttributeDefinitions": [
                    {"AttributeName": "jobId", "AttributeType": "S"},
                    {"AttributeName": "statusShard", "AttributeType": "S"},
                    {"AttributeName": "dueAt", "AttributeType": "N"},
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [{"AttributeName": "jobId", "KeyType": "HASH"}],
                "GlobalSecondaryIndexes": [
                    {
                        "IndexName": "byStatus",
                        "KeySchema": [
                            {"AttributeName": "statusShard", "KeyType": "HASH"},
                            {"AttributeName": "dueAt", "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                ],
                "Replicas": [
                    {
                        "Region": {"Ref": "AWS::Region"},
                        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                    }
                ],
                "SSESpecification": {"SSEEnabled": True},
                "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
            },
        },
        "Deliveries": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "AttributeDefinitions": [
                    {"AttributeName": "fanoutId", "AttributeType": "S"},
                    {"AttributeName": "attemptKey", "AttributeType": "S"},
                ],
                "BillingMode": "PAY_PER_REQUEST",
                "KeySchema": [
                    {"AttributeName": "fanoutId", "KeyType": "HASH"},
                    {"AttributeName": "attemptKey", "KeyType": "RANGE"},
                ],
            },
        },
        "Uploads": {"Type": "AWS::S3::Bucket", "Properties": {}},
        "Alerts": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": "offload alerts"}},
        "WebhookSecret": {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {"GenerateSecretString": {"PasswordLength": 40, "ExcludePunctuation": True}},
        },
        "WorkerRole": {"Type": "AWS::IAM::Role", "Properties": {}},
        "Worker": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": "lambdas.handlers.worker.handler",
                "Timeout": 60,
                "MemorySize": 512,
                "Role": {"Fn::GetAtt": ["WorkerRole", "Arn"]},
                "Environment": {
                    "Variables": {
                        "QUEUE_URL": {"Ref": "Queue"},
                        "DLQ_URL": {"Ref": "Dlq"},
                        "JOBS_TABLE_NAME": {"Ref": "Jobs"},
                        "UPLOADS_BUCKET_NAME": {"Ref": "Uploads"},
                        "WEBHOOK_SECRET_ARN": {"Ref": "WebhookSecret"},
                        "BACKOFF_BASE_SECONDS": "10",
                        "QUEUE_NAME": {"Fn::Select": [4, {"Fn::Split": ["/", {"Ref": "Queue"}]}]},
                        "TABLE_ARN_JOINED": {"Fn::Join": ["|", [{"Fn::GetAtt": ["Jobs", "Arn"]}, "x"]]},
                        "WHERE": {"Fn::Sub": "${AWS::Region}:${Queue.QueueName}:${!Literal}"},
                        "LOCAL": {"Fn::If": ["IsLocal", "yes", "no"]},
                        "GONE": {"Ref": "AWS::NoValue"},
                    }
                },
            },
        },
        "Api": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Handler": "lambdas.handlers.api.handler",
                "Environment": {"Variables": {"ALERTS_TOPIC_ARN": {"Ref": "Alerts"}}},
            },
        },
        "WorkerSource": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {
                "EventSourceArn": {"Fn::GetAtt": ["Queue", "Arn"]},
                "FunctionName": {"Ref": "Worker"},
                "BatchSize": 10,
                "MaximumBatchingWindowInSeconds": 5,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "ScalingConfig": {"MaximumConcurrency": 10},
            },
        },
        "Every5": {
            "Type": "AWS::Events::Rule",
            "Properties": {
                "ScheduleExpression": "rate(5 minutes)",
                "State": "ENABLED",
                "Targets": [{"Arn": {"Fn::GetAtt": ["Worker", "Arn"]}, "Id": "Target0"}],
            },
        },
        "RestApi": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "offload"}},
        "JobsResource": {
            "Type": "AWS::ApiGateway::Resource",
            "Properties": {
                "ParentId": {"Fn::GetAtt": ["RestApi", "RootResourceId"]},
                "PathPart": "jobs",
                "RestApiId": {"Ref": "RestApi"},
            },
        },
        "JobResource": {
            "Type": "AWS::ApiGateway::Resource",
            "Properties": {
                "ParentId": {"Ref": "JobsResource"},
                "PathPart": "{jobId}",
                "RestApiId": {"Ref": "RestApi"},
            },
        },
        "GetJob": {
            "Type": "AWS::ApiGateway::Method",
            "Properties": {
                "HttpMethod": "GET",
                "ResourceId": {"Ref": "JobResource"},
                "RestApiId": {"Ref": "RestApi"},
                "ApiKeyRequired": True,
                "Integration": {
                    "Type": "AWS_PROXY",
                    "IntegrationHttpMethod": "POST",
                    "Uri": {
                        "Fn::Join": [
                            "",
                            [
                                "arn:",
                                {"Ref": "AWS::Partition"},
                                ":apigateway:",
                                {"Ref": "AWS::Region"},
                                ":lambda:path/2015-03-31/functions/",
                                {"Fn::GetAtt": ["Api", "Arn"]},
                                "/invocations",
                            ],
                        ]
                    },
                },
            },
        },
        "Stage": {
            "Type": "AWS::ApiGateway::Stage",
            "Properties": {"RestApiId": {"Ref": "RestApi"}, "StageName": "prod"},
        },
        "Plan": {
            "Type": "AWS::ApiGateway::UsagePlan",
            "Properties": {
                "ApiStages": [{"ApiId": {"Ref": "RestApi"}, "Stage": {"Ref": "Stage"}}],
                "Throttle": {"RateLimit": 50, "BurstLimit": 100},
            },
        },
    },
    "Outputs": {
        "QueueUrl": {"Value": {"Ref": "Queue"}},
        "ApiUrl": {
            "Value": {
                "Fn::Join": [
                    "",
                    ["https://", {"Ref": "RestApi"}, ".execute-api.amazonaws.com/", {"Ref": "Stage"}, "/"],
                ]
            }
        },
    },
}


@pytest.fixture
def provisioned(aws_env: None) -> Provisioned:
    with mock_aws():
        yield provision(TEMPLATE)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def test_queue_carries_the_template_visibility_timeout_and_redrive(provisioned: Provisioned) -> None:
    sqs = boto3.client("sqs")
    queue, dlq = provisioned.resources["Queue"], provisioned.resources["Dlq"]

    attributes = sqs.get_queue_attributes(QueueUrl=queue.ref, AttributeNames=["All"])["Attributes"]

    assert attributes["VisibilityTimeout"] == "360"
    assert attributes["MessageRetentionPeriod"] == "345600"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": dlq.attributes["Arn"],
        "maxReceiveCount": 15,
    }


def test_table_has_the_template_keys_index_ttl_and_pitr(provisioned: Provisioned) -> None:
    dynamodb = boto3.client("dynamodb")
    name = provisioned.resources["Jobs"].ref

    table = dynamodb.describe_table(TableName=name)["Table"]
    ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    backups = dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]

    assert table["KeySchema"] == [{"AttributeName": "jobId", "KeyType": "HASH"}]
    (index,) = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "byStatus"
    assert (
        index["KeySchema"]
        == TEMPLATE["Resources"]["Jobs"]["Properties"]["GlobalSecondaryIndexes"][0]["KeySchema"]
    )
    assert index["Projection"] == {"ProjectionType": "ALL"}
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert ttl == {"AttributeName": "expiresAt", "TimeToLiveStatus": "ENABLED"}
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"


def test_bucket_topic_and_generated_secret_exist(provisioned: Provisioned) -> None:
    boto3.client("s3").head_bucket(Bucket=provisioned.resources["Uploads"].ref)
    topics = [t["TopicArn"] for t in boto3.client("sns").list_topics()["Topics"]]
    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=provisioned.resources["WebhookSecret"].ref
    )

    assert provisioned.resources["Alerts"].ref in topics
    assert len(secret["SecretString"]) == 40
    assert secret["SecretString"].isalnum()


def test_function_environment_resolves_every_intrinsic(provisioned: Provisioned) -> None:
    env = provisioned.function_env("lambdas.handlers.worker.handler")
    queue = provisioned.resources["Queue"]

    assert env["QUEUE_URL"] == queue.ref
    assert env["DLQ_URL"] == provisioned.resources["Dlq"].ref
    assert env["JOBS_TABLE_NAME"] == provisioned.resources["Jobs"].ref
    assert env["WEBHOOK_SECRET_ARN"].startswith("arn:aws:secretsmanager:us-east-1:")
    assert env["BACKOFF_BASE_SECONDS"] == "10"
    assert env["QUEUE_NAME"] == queue.attributes["QueueName"]
    assert env["TABLE_ARN_JOINED"] == provisioned.resources["Jobs"].attributes["Arn"] + "|x"
    assert env["WHERE"] == f"us-east-1:{queue.attributes['QueueName']}:${{Literal}}"
    assert env["LOCAL"] == "yes"
    assert "GONE" not in env
    assert provisioned.function_env("lambdas.handlers.api.handler") == {
        "ALERTS_TOPIC_ARN": provisioned.resources["Alerts"].ref
    }


def test_event_source_mapping_schedule_and_api_are_read_from_the_template(provisioned: Provisioned) -> None:
    (esm,) = provisioned.event_source_mappings
    (schedule,) = provisioned.schedules
    (api,) = provisioned.apis
    worker = provisioned.function("lambdas.handlers.worker.handler")

    assert (esm.function, esm.queue, esm.queue_url) == ("Worker", "Queue", provisioned.resources["Queue"].ref)
    assert (esm.batch_size, esm.batching_window_seconds, esm.maximum_concurrency) == (10, 5, 10)
    assert esm.report_batch_item_failures
    assert (worker.timeout_seconds, worker.memory_mb) == (60, 512)
    assert (schedule.function, schedule.rate_seconds) == ("Worker", 300)
    assert api.stage == "prod"
    assert [(r.method, r.resource, r.function, r.api_key_required) for r in api.routes] == [
        ("GET", "/jobs/{jobId}", "Api", True)
    ]
    assert (api.limits.rate_limit, api.limits.burst_limit) == (50, 100)
    assert provisioned.outputs["ApiUrl"] == f"https://{api.api_id}.execute-api.amazonaws.com/prod/"


def test_unknown_handler_is_an_error(provisioned: Provisioned) -> None:
    with pytest.raises(LookupError):
        provisioned.function_env("lambdas.handlers.nope.handler")


def test_attribute_unknown_locally_is_an_error_not_a_guess(aws_env: None) -> None:
    template = {
        "Resources": {
            "Key": {"Type": "AWS::KMS::Key", "Properties": {}},
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Handler": "x.handler",
                    "Environment": {"Variables": {"KEY": {"Fn::GetAtt": ["Key", "Arn"]}}},
                },
            },
        }
    }
    with mock_aws(), pytest.raises(UnsupportedTemplateError, match="Arn"):
        provision(template)
