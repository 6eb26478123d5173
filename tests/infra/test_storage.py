"""Where state lives: the two tables, the uploads bucket and the webhook signing secret."""

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from lambdas.store import schema
from tests.infra.cfn import logical_id, resources

pytestmark = pytest.mark.xdist_group("infra-template")


def test_tables_are_on_demand_recoverable_encrypted_and_retained(cfn: Template) -> None:
    tables = cfn.find_resources(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
                "TableName": Match.absent(),
                # Finished jobs and their delivery records expire; webhook secrets and schedules never set it.
                "TimeToLiveSpecification": {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True},
                "DeletionProtectionEnabled": True,
            },
        },
    )
    assert len(tables) == 5  # jobs, deliveries, webhook secrets, schedules, limits


def test_deletion_protection_can_be_turned_off_for_development() -> None:
    from infra.synth import synthesize

    template = synthesize({"deletionProtection": "false"})
    tables = resources(template, "AWS::DynamoDB::Table").values()
    assert [t["Properties"]["DeletionProtectionEnabled"] for t in tables] == [False] * 5


def test_jobs_table_keys_index_and_ttl(cfn: Template) -> None:
    cfn.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": schema.JOBS_PK, "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": Match.array_equals(
                [
                    {
                        "IndexName": index.name,
                        "KeySchema": [
                            {"AttributeName": index.partition_key, "KeyType": "HASH"},
                            {"AttributeName": index.sort_key, "KeyType": "RANGE"},
                        ],
                        # Never ALL: an update that moves no key of an index must cost it no write.
                        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(index.include)}
                        if index.include
                        else {"ProjectionType": "KEYS_ONLY"},
                    }
                    for index in schema.JOB_INDEXES
                ]
            ),
            "TimeToLiveSpecification": {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True},
        },
    )


def test_deliveries_table_keys_and_ttl_and_no_index(cfn: Template) -> None:
    """No index: the `byEndpoint` index was read by nothing in production (docs/internals/capacity.md
    lists the indexes). Broken line: the `add_global_secondary_index` call put back in `infra/tables.py`."""
    cfn.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": schema.DELIVERIES_PK, "KeyType": "HASH"},
                {"AttributeName": schema.DELIVERIES_SK, "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": Match.array_equals(
                [
                    {"AttributeName": name, "AttributeType": "S"}
                    for name in (
                        schema.DELIVERIES_PK,
                        schema.DELIVERIES_SK,
                    )
                ]
            ),
            "GlobalSecondaryIndexes": Match.absent(),
            "TimeToLiveSpecification": {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True},
        },
    )


def _bucket(template: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    bucket_id = logical_id(template, "AWS::S3::Bucket", name)
    return bucket_id, template["Resources"][bucket_id]["Properties"]


@pytest.mark.parametrize("name", ["UploadsBucket", "AccessLogsBucket"])
def test_bucket_is_private_encrypted_and_https_only(template: dict[str, Any], name: str) -> None:
    bucket_id, bucket = _bucket(template, name)
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert "BucketName" not in bucket
    (policy,) = [
        p["Properties"]["PolicyDocument"]
        for p in resources(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert {
        "Effect": "Deny",
        "Action": "s3:*",
        "Principal": {"AWS": "*"},
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }.items() <= next(s for s in policy["Statement"] if s["Effect"] == "Deny").items()


def test_uploads_bucket_lifecycle(template: dict[str, Any]) -> None:
    _, bucket = _bucket(template, "UploadsBucket")
    rules = bucket["LifecycleConfiguration"]["Rules"]
    assert all(rule["Status"] == "Enabled" for rule in rules)
    assert {"AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}.items() <= next(
        r for r in rules if "AbortIncompleteMultipartUpload" in r
    ).items()
    expiry = {
        rule.get("Prefix"): rule.get("ExpirationInDays") for rule in rules if "ExpirationInDays" in rule
    }
    assert set(expiry) == {"uploads/", "results/"}
    assert all(days >= 1 for days in expiry.values())


def test_uploads_bucket_logs_access_to_the_log_bucket(template: dict[str, Any]) -> None:
    logs_id, _ = _bucket(template, "AccessLogsBucket")
    _, uploads = _bucket(template, "UploadsBucket")
    assert uploads["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}


def test_webhook_secret_is_generated_without_punctuation(cfn: Template) -> None:
    cfn.resource_count_is("AWS::SecretsManager::Secret", 1)
    cfn.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {
            "GenerateSecretString": {"ExcludePunctuation": True, "PasswordLength": Match.any_value()},
            "SecretString": Match.absent(),
            "Name": Match.absent(),
        },
    )
    (secret,) = cfn.find_resources("AWS::SecretsManager::Secret").values()
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
