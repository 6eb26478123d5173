"""Issue 19 row 8: an upload is its key's, and its size limit holds where the bytes arrive.

Before (measured on main 3ba30bf with `make run -c clientKeys=alpha,beta`): beta's `process_file` job
named alpha's upload and finished with its SHA-256; a 120 MB PUT to a 50 MB upload URL answered 200.
"""

import boto3
import pytest

from lambdas import config
from lambdas.jobs.base import InvalidPayloadError, PermanentJobError
from lambdas.jobs.types import process_file
from lambdas.jobs.types.process_file import ProcessFilePayload
from lambdas.store.uploads import Uploads
from tests.support import uploads
from tests.support.contexts import job_context, submission_context

ALPHA, BETA = "alpha-key-id", "beta-key-id"
DATA = b"alpha's ledger,42\n"


def test_another_keys_upload_reads_as_missing_at_submission_and_when_running(stack):
    """Seen failing when `UploadsBucket.head` (lifecycle/attempt/capabilities.py) dropped its `self._owner`
    (submission accepted), and when `download`'s did (beta's run returned alpha's SHA-256)."""
    key = uploads.upload(stack.bucket, "ledger.csv", DATA, owner=ALPHA)
    payload = ProcessFilePayload(key=key)

    with pytest.raises(InvalidPayloadError, match="nothing has been uploaded") as refused:
        process_file.check_submission(payload, submission_context(caller=BETA))
    assert refused.value.code == "upload_not_found"
    # The worker decides when S3 would not answer the API's HEAD: beta's job still cannot read it.
    with pytest.raises(PermanentJobError, match="nothing has been uploaded"):
        process_file.run(payload, job_context("job-beta", "process_file", owner=BETA))

    process_file.check_submission(payload, submission_context(caller=ALPHA))
    assert process_file.run(payload, job_context("job-alpha", "process_file", owner=ALPHA))["size"] == len(
        DATA
    )


def test_an_upload_stored_without_an_owner_is_nobodys(stack):
    """An object from before owners were recorded (or written around the presigned POST). Seen failing
    when `_owned` (store/uploads.py) let an upload without an owner through."""
    key = "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/old.csv"
    boto3.client("s3").put_object(Bucket=stack.bucket, Key=key, Body=DATA)

    with pytest.raises(InvalidPayloadError, match="nothing has been uploaded"):
        process_file.check_submission(ProcessFilePayload(key=key), submission_context(caller=ALPHA))
    with pytest.raises(PermanentJobError, match="nothing has been uploaded"):
        process_file.run(ProcessFilePayload(key=key), job_context("job-1", "process_file", owner=ALPHA))


def test_the_api_answers_422_upload_not_found_to_a_job_naming_another_keys_upload(stack):
    """Through the routes: `POST /uploads` records its caller, `POST /jobs` checks it. Seen failing when
    `create_upload` (handlers/api.py) passed `""` as the owner (beta's own job was refused too), and
    when `_invalid_payload` (rest/errors.py) answered `invalid_payload` for every refusal."""
    pipeline = stack.pipeline
    ticket = pipeline.request("POST", "/uploads", {"filename": "ledger.csv"}, api_key_id=ALPHA).body
    assert ticket["method"] == "POST"
    assert uploads.send(ticket, DATA).status_code == 204

    refused = pipeline.request(
        "POST", "/jobs", {"type": "process_file", "payload": {"key": ticket["key"]}}, api_key_id=BETA
    )

    assert refused.status == 422
    assert refused.body["error"]["code"] == "upload_not_found"
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 0
    job_id = pipeline.submit("process_file", {"key": ticket["key"]}, api_key_id=ALPHA)
    pipeline.drain()
    assert pipeline.request("GET", f"/jobs/{job_id}", api_key_id=ALPHA).body["status"] == "done"


def test_s3_refuses_a_file_over_the_limit_before_storing_it(stack, monkeypatch):
    """The presigned POST's `content-length-range`, applied by S3 (and by `local_runtime.s3_post_policy`
    on moto). Seen failing when `presign_post` (store/uploads.py) left the condition out: 204, stored."""
    monkeypatch.setenv(config.ENV_MAX_FILE_BYTES, "1000")
    ticket = stack.pipeline.request("POST", "/uploads", {"filename": "big.bin"}).body
    assert ticket["maxBytes"] == 1000

    refused = uploads.send(ticket, b"\0" * 1001)

    assert refused.status_code == 400
    assert "<Code>EntityTooLarge</Code>" in refused.text
    assert "<ProposedSize>1001</ProposedSize><MaxSizeAllowed>1000</MaxSizeAllowed>" in refused.text
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="uploads/")
    assert uploads.send(ticket, b"\0" * 1000).status_code == 204


@pytest.mark.parametrize(
    ("field", "value"),
    [("x-amz-meta-owner", BETA), ("key", "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/elsewhere.csv")],
)
def test_a_form_that_changes_a_signed_field_is_refused(stack, field, value):
    """A client cannot claim another owner, or another key, for its upload. Seen failing when
    `presign_post` left the owner's condition out (the form claiming beta was stored)."""
    ticket = Uploads(stack.bucket).presign_post("ledger.csv", ALPHA, 1000)
    fields = {**ticket.fields, field: value}

    refused = uploads.send({"url": ticket.url, "fields": fields}, DATA)

    assert refused.status_code == 403
    assert "Policy Condition failed" in refused.text
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=stack.bucket, Prefix="uploads/")
