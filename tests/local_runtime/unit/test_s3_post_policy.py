"""The S3 POST-policy rules `local_runtime.s3_post_policy` applies to moto, rule by rule, on the form
botocore presigns (no network: presigning is local)."""

import base64
import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.config import Config

from local_runtime.s3_post_policy import check

CREDENTIALS = {"AKIDLOCAL": "local-secret"}
BUCKET = "uploads-bucket"
KEY = "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/a.csv"
NOW = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)


def presigned(**fields: str) -> dict[str, str]:
    s3 = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id="AKIDLOCAL",
        aws_secret_access_key="local-secret",
        aws_session_token="token",
        config=Config(signature_version="s3v4"),  # as lambdas/store/clients.py signs
    )
    wanted = {"x-amz-meta-owner": "alpha", **fields}
    conditions = [{name: value} for name, value in wanted.items()] + [["content-length-range", 10, 100]]
    post = s3.generate_presigned_post(BUCKET, KEY, Fields=wanted, Conditions=conditions, ExpiresIn=900)
    return dict(post["fields"])


def test_the_form_as_presigned_is_stored_at_any_size_in_its_range() -> None:
    form = presigned()
    for size in (10, 55, 100):
        assert check(form, BUCKET, size, datetime.now(UTC), CREDENTIALS) is None


def test_a_file_over_the_range_is_400_entity_too_large_with_both_sizes() -> None:
    refused = check(presigned(), BUCKET, 101, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.code) == (400, "EntityTooLarge")
    assert "<ProposedSize>101</ProposedSize><MaxSizeAllowed>100</MaxSizeAllowed>" in refused.xml()


def test_a_file_under_the_range_is_400_entity_too_small() -> None:
    refused = check(presigned(), BUCKET, 9, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.code) == (400, "EntityTooSmall")


@pytest.mark.parametrize(
    ("field", "value"),
    [("x-amz-meta-owner", "beta"), ("key", "uploads/other/a.csv"), ("X-Amz-Meta-Owner", "beta")],
)
def test_a_changed_signed_field_is_403_naming_the_condition(field: str, value: str) -> None:
    form = {name: v for name, v in presigned().items() if name.lower() != field.lower()}
    form[field] = value
    refused = check(form, BUCKET, 50, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.code) == (403, "AccessDenied")
    assert f'Policy Condition failed: ["eq", "${field.lower()}"' in refused.message


def test_another_bucket_fails_the_bucket_condition() -> None:
    refused = check(presigned(), "someone-elses", 50, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert '"$bucket"' in refused.message


def test_a_field_no_condition_covers_is_403_extra_input_fields() -> None:
    form = {**presigned(), "x-amz-meta-note": "hi", "x-ignore-this": "fine"}
    refused = check(form, BUCKET, 50, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert refused.message.endswith("Extra input fields: x-amz-meta-note")


def test_an_expired_policy_is_403() -> None:
    refused = check(presigned(), BUCKET, 50, datetime.now(UTC) + timedelta(seconds=901), CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.message) == (403, "Invalid according to Policy: Policy expired.")


def test_a_policy_rewritten_by_the_client_no_longer_matches_its_signature() -> None:
    form = presigned()
    policy = json.loads(base64.b64decode(form["policy"]))
    policy["conditions"] = [c for c in policy["conditions"] if not isinstance(c, list)]  # no size limit
    form["policy"] = base64.b64encode(json.dumps(policy).encode()).decode()
    refused = check(form, BUCKET, 10**9, datetime.now(UTC), CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.code) == (403, "SignatureDoesNotMatch")


def test_an_unknown_access_key_is_403() -> None:
    refused = check(presigned(), BUCKET, 50, datetime.now(UTC), {"SOMEONE": "else"})
    assert refused is not None
    assert (refused.status, refused.code) == (403, "InvalidAccessKeyId")


def test_a_post_without_a_policy_is_an_anonymous_write_and_refused() -> None:
    refused = check({"key": KEY}, BUCKET, 50, NOW, CREDENTIALS)
    assert refused is not None
    assert (refused.status, refused.code) == (403, "AccessDenied")
