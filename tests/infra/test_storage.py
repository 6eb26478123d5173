"""Where state lives: the two tables, the uploads bucket and the webhook signing secret."""

from typing import Any

import pytest

from lambdas.store import schema
from tests.infra.cfn import logical_id, only, resources

pytestmark = pytest.mark.xdist_group("infra-template")


def _table(template: dict[str, Any], name: str) -> dict[str, Any]:
    return template["Resources"][logical_id(template, "AWS::DynamoDB::Table", name)]


def _keys(key_schema: list[dict[str, str]]) -> dict[str, str]:
    return {k["KeyType"]: k["AttributeName"] for k in key_schema}


@pytest.mark.parametrize("name", ["JobsTable", "DeliveriesTable"])
def test_table_is_on_demand_recoverable_encrypted_and_retained(template: dict[str, Any], name: str) -> None:
    table = _table(template, name)
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert "TableName" not in props


def test_jobs_table_keys_index_and_ttl(template: dict[str, Any]) -> None:
    props = _table(template, "JobsTable")["Properties"]
    assert _keys(props["KeySchema"]) == {"HASH": schema.JOBS_PK}
    assert props["TimeToLiveSpecification"] == {"AttributeName": schema.TTL_ATTRIBUTE, "Enabled": True}
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == schema.STATUS_INDEX
    assert _keys(index["KeySchema"]) == {"HASH": schema.STATUS_INDEX_PK, "RANGE": schema.STATUS_INDEX_SK}
    assert index["Projection"] == {"ProjectionType": "ALL"}
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types == {schema.JOBS_PK: "S", schema.STATUS_INDEX_PK: "S", schema.STATUS_INDEX_SK: "N"}


def test_deliveries_table_keys_and_index(template: dict[str, Any]) -> None:
    props = _table(template, "DeliveriesTable")["Properties"]
    assert _keys(props["KeySchema"]) == {"HASH": schema.DELIVERIES_PK, "RANGE": schema.DELIVERIES_SK}
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == schema.ENDPOINT_INDEX
    assert _keys(index["KeySchema"]) == {"HASH": schema.ENDPOINT_INDEX_PK, "RANGE": schema.ENDPOINT_INDEX_SK}
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert set(types.values()) == {"S"}
    assert "TimeToLiveSpecification" not in props


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


def test_webhook_secret_is_generated_without_punctuation(template: dict[str, Any]) -> None:
    _, secret = only(template, "AWS::SecretsManager::Secret")
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["ExcludePunctuation"] is True
    assert generated["PasswordLength"] >= 32
    assert "SecretString" not in secret["Properties"]
    assert "Name" not in secret["Properties"]
