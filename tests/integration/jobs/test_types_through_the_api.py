"""send_email and process_file as a client uses them: through the API, the worker and the lifecycle."""

from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends
from PIL import Image

from lambdas.store import clients
from tests.support import uploads

ASSETS = Path(__file__).resolve().parents[2] / "assets"
EMAIL = {"to": ["ada@example.com"], "subject": "Welcome", "text": "Hello Ada", "html": "<p>Hello Ada</p>"}


def sent():
    return ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages


def test_email_is_sent_and_its_message_id_is_the_result(stack):
    job_id = stack.pipeline.submit("send_email", EMAIL)
    stack.pipeline.drain()

    job = stack.pipeline.job(job_id)
    [message] = sent()
    assert job["status"] == "done"
    assert job["result"] == {"messageId": message.id, "recipients": 1}
    assert (message.source, message.destinations["ToAddresses"]) == (stack.sender, ["ada@example.com"])


def test_a_rejected_email_is_dead_without_spending_retries(stack):
    boto3.client("sesv2").delete_email_identity(EmailIdentity=stack.sender)
    job_id = stack.pipeline.submit("send_email", EMAIL, maxAttempts=5)
    stack.pipeline.drain()

    job = stack.pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert "MessageRejected" in job["lastError"]
    assert sent() == []


def test_a_throttled_email_is_retried_then_sent(stack, clock):
    """The clock is the test's: send_email's own limit (14 a second) spaces its starts 1/14 s apart,
    and on wall time a fast retry came within that spacing and waited past the drain (seen on a quiet
    machine: the job ended `pending`)."""
    job_id = stack.pipeline.submit("send_email", EMAIL)
    records = stack.pipeline.receive(stack.pipeline.queue_url)
    with Stubber(clients.client("sesv2")) as ses:
        ses.add_client_error(
            "send_email", service_error_code="TooManyRequestsException", http_status_code=429
        )
        stack.pipeline.run_worker(records)
    throttled = stack.pipeline.job(job_id)
    assert (throttled["status"], throttled["attempts"]) == ("pending", 1)
    assert "TooManyRequestsException" in throttled["lastError"]
    assert throttled["nextAttemptAt"] is not None

    clock.advance(60)  # the backoff passes, and the limit has a token again
    stack.pipeline.make_visible(records)
    stack.pipeline.drain()
    assert stack.pipeline.job(job_id)["status"] == "done"
    assert len(sent()) == 1


@pytest.mark.parametrize(
    "payload",
    [
        {**EMAIL, "to": ["not an address"]},
        {**EMAIL, "from": "ceo@example.com"},
        {"to": ["ada@example.com"], "subject": "no body"},
    ],
)
def test_invalid_email_payloads_are_a_422(stack, payload):
    response = stack.pipeline.request("POST", "/jobs", {"type": "send_email", "payload": payload})
    assert response.status == 422


def test_upload_then_process_a_photo(stack):
    # given: a client asks for an upload and POSTs its photo there
    answer = stack.pipeline.request(
        "POST", "/uploads", {"filename": "Holiday Photo.jpg", "contentType": "image/jpeg"}
    )
    assert answer.status == 201
    ticket = answer.body
    assert ticket["method"] == "POST"
    assert ticket["fields"]["Content-Type"] == "image/jpeg"
    assert ticket["fields"]["key"] == ticket["key"]
    assert ticket["key"].endswith("/Holiday_Photo.jpg")
    assert ticket["maxBytes"] == 50 * 1024 * 1024
    assert uploads.send(ticket, (ASSETS / "rotated_exif6.jpg").read_bytes()).status_code == 204

    # when
    job_id = stack.pipeline.submit("process_file", {"key": ticket["key"]})
    stack.pipeline.drain()

    # then
    job = stack.pipeline.job(job_id)
    assert job["status"] == "done"
    assert job["result"]["keys"] == [f"results/{job_id}/thumb-512.jpg", f"results/{job_id}/thumb-128.jpg"]
    s3 = boto3.client("s3")
    sizes = []
    for key in job["result"]["keys"]:
        body = s3.get_object(Bucket=stack.bucket, Key=key)["Body"]
        sizes.append(Image.open(body).size)
    assert sizes == [(341, 512), (85, 128)]


def test_a_truncated_image_is_dead_with_a_clear_reason(stack):
    ticket = stack.pipeline.request("POST", "/uploads", {"filename": "broken.jpg"}).body
    assert uploads.send(ticket, (ASSETS / "truncated.jpg").read_bytes()).status_code == 204
    job_id = stack.pipeline.submit("process_file", {"key": ticket["key"]}, maxAttempts=5)
    stack.pipeline.drain()

    job = stack.pipeline.job(job_id)
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert "truncated" in job["lastError"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"key": "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/missing.png"}, "upload the file"),
        ({"key": "results/some-job/thumb-128.png"}, "payload is not a valid"),
        ({"key": "uploads/x.png", "bucket": "someone-elses-bucket"}, "payload is not a valid"),
    ],
)
def test_process_file_only_takes_uploaded_keys_of_our_bucket(stack, payload, message):
    response = stack.pipeline.request("POST", "/jobs", {"type": "process_file", "payload": payload})
    assert response.status == 422
    assert message in response.body["error"]["message"]


@pytest.mark.parametrize("body", [{}, {"filename": ""}, {"filename": "a.jpg", "contentType": "not a type"}])
def test_upload_requests_are_validated(stack, body):
    assert stack.pipeline.request("POST", "/uploads", body).status == 400
