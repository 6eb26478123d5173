"""POST /jobs and GET /jobs/{jobId} through the api handler, as API Gateway invokes it."""

import base64
import json
import re
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from lambdas import config
from lambdas.handlers import api
from lambdas.jobs import registry
from lambdas.store import codec
from local_runtime.context import LambdaContext
from tests.support.pipeline import Pipeline, fail_sends, load_event
from tests.support.uploads import send

pytestmark = pytest.mark.usefixtures("test_types")


def queued_bodies(pipeline: Pipeline) -> list[dict[str, str]]:
    return [json.loads(r["body"]) for r in pipeline.receive(pipeline.queue_url)]


def test_submit_answers_202_stores_the_job_and_queues_its_id_type_and_owner_never_its_payload(
    pipeline: Pipeline,
) -> None:
    """The message names the job, its type and its owner (flow control admits a start from them before
    the claim); the payload stays in the table."""
    response = pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {"value": "hi"}})

    assert response.status == 202
    job_id = response.body["jobId"]
    assert response.body == {"jobId": job_id, "status": "pending"}
    assert (
        response.headers["Location"]
        == f"https://abcdef1234.execute-api.us-east-1.amazonaws.com/prod/jobs/{job_id}"
    )
    assert queued_bodies(pipeline) == [
        {"jobId": job_id, "type": "test_echo", "owner": "k1e2y3i4d5"}
    ]  # the event's key
    job = pipeline.job(job_id)
    assert job["status"] == "pending"
    assert job["type"] == "test_echo"
    assert job["attempts"] == 0
    assert job["maxAttempts"] == config.DEFAULT_MAX_ATTEMPTS
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", job["createdAt"])


def test_get_shows_every_documented_field(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_echo", {"value": "x"}, maxAttempts=3)
    pipeline.run_worker()

    job = pipeline.job(job_id)

    assert job["status"] == "done"
    assert job["result"] == {"echo": "x", "attempt": 1}
    assert job["attempts"] == 1
    assert job["maxAttempts"] == 3
    assert job["lastError"] is None
    assert {
        "jobId",
        "type",
        "status",
        "attempts",
        "maxAttempts",
        "lastError",
        "result",
        "createdAt",
        "updatedAt",
    } <= set(job)


def test_base64_encoded_body_is_accepted(pipeline: Pipeline) -> None:
    response = pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {}}, base64_body=True)
    assert response.status == 202


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('{"type": "test_echo", "payload": ', 400, "malformed_json"),
        ('{"payload": {}}', 400, "invalid_request"),
        ('{"type": "test_echo", "payload": {}, "delaySeconds": 31536001}', 400, "invalid_request"),
        ('{"type": "test_echo", "payload": {}, "maxAttempts": 0}', 400, "invalid_request"),
        ('{"type": "test_echo", "payload": {}, "priority": "urgent"}', 400, "invalid_request"),
        ('{"type": "no_such_type", "payload": {}}', 422, "unknown_job_type"),
        ('{"type": "test_flaky", "payload": {"failTimes": "twice"}}', 422, "invalid_payload"),
        ('{"type": "test_echo", "payload": {"unexpected": 1}}', 422, "invalid_payload"),
    ],
)
def test_bad_input_is_refused_with_a_json_error_and_nothing_is_written(
    pipeline: Pipeline, body: str, status: int, code: str
) -> None:
    response = pipeline.request("POST", "/jobs", raw_body=body)

    assert response.status == status
    assert response.body["error"]["code"] == code
    assert response.body["error"]["message"]
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 0
    assert pipeline.visible(pipeline.queue_url) == 0


def test_invalid_payload_names_the_offending_field(pipeline: Pipeline) -> None:
    response = pipeline.request("POST", "/jobs", {"type": "test_flaky", "payload": {}})
    assert response.status == 422
    assert response.body["error"]["details"][0]["loc"] == ["payload", "failTimes"]


def test_body_over_256_kib_is_413(pipeline: Pipeline) -> None:
    body = json.dumps({"type": "test_echo", "payload": {"value": "x" * config.MAX_BODY_BYTES}})
    response = pipeline.request("POST", "/jobs", raw_body=body)
    assert response.status == 413
    assert response.body["error"]["code"] == "payload_too_large"
    assert pipeline.visible(pipeline.queue_url) == 0


def test_unknown_job_is_404(pipeline: Pipeline) -> None:
    response = pipeline.request("GET", "/jobs/3f0e2a52-0000-4000-8000-000000000000")
    assert response.status == 404
    assert response.body["error"]["code"] == "job_not_found"


def test_unknown_route_is_404_in_the_error_shape(pipeline: Pipeline) -> None:
    response = pipeline.request("GET", "/nothing-here")
    assert response.status == 404
    assert response.body["error"]["code"] == "not_found"


def test_idempotency_key_replay_returns_the_same_job_without_a_second_message(pipeline: Pipeline) -> None:
    request = {"type": "test_echo", "payload": {"value": "once"}}
    first = pipeline.request("POST", "/jobs", request, headers={"Idempotency-Key": "order-42"})
    again = pipeline.request("POST", "/jobs", request, headers={"Idempotency-Key": "order-42"})

    assert first.status == again.status == 202
    assert again.body["jobId"] == first.body["jobId"]
    assert len(queued_bodies(pipeline)) == 1
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 1


def test_idempotency_key_with_a_different_body_is_409(pipeline: Pipeline) -> None:
    headers = {"Idempotency-Key": "order-43"}
    pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {"value": "a"}}, headers=headers)
    response = pipeline.request(
        "POST", "/jobs", {"type": "test_echo", "payload": {"value": "b"}}, headers=headers
    )

    assert response.status == 409
    assert response.body["error"]["code"] == "idempotency_conflict"
    assert response.body["error"]["message"] == (
        "this Idempotency-Key was already used with a different request body"
    )
    assert len(queued_bodies(pipeline)) == 1


def test_send_message_failure_after_the_put_still_answers_202(pipeline: Pipeline) -> None:
    fail_sends()

    response = pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {}})

    assert response.status == 202
    assert pipeline.job(response.body["jobId"])["status"] == "pending"
    assert pipeline.visible(pipeline.queue_url) == 0


def test_test_job_types_are_not_part_of_the_deployed_api(pipeline: Pipeline) -> None:
    from lambdas.jobs import registry

    for name in [n for n in registry.names() if n.startswith("test_")]:
        registry.unregister(name)
    response = pipeline.request("POST", "/jobs", {"type": "test_echo", "payload": {}})
    assert response.status == 422
    assert response.body["error"]["code"] == "unknown_job_type"


def test_a_body_sent_without_a_json_content_type_is_still_read_as_json(pipeline: Pipeline) -> None:
    # curl -d without -H content-type sends application/x-www-form-urlencoded.
    response = pipeline.request(
        "POST",
        "/jobs",
        {"type": "test_echo", "payload": {"value": "form?"}},
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status == 202
    assert pipeline.job(response.body["jobId"])["type"] == "test_echo"


def invoke(event: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    response = api.handler(event, LambdaContext(function_name="api"))
    headers = {k: v[-1] for k, v in (response.get("multiValueHeaders") or {}).items()}
    return response["statusCode"], json.loads(response["body"]), headers


def post_event(body: str, **changes: Any) -> dict[str, Any]:
    event = load_event("api_post_job.json")
    event["body"] = body
    event.update(changes)
    return event


def nested(levels: int, leaf: Any = 1) -> Any:
    """`levels` arrays and objects inside each other, built without recursion."""
    value = leaf
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


def fanout(data: dict[str, Any]) -> dict[str, Any]:
    endpoints = [{"id": "a", "url": "https://93.184.215.14/hook"}]
    return {"type": "webhook_fanout", "payload": {"eventType": "x.y", "data": data, "endpoints": endpoints}}


def test_location_is_the_jobs_full_url_on_the_local_runtime_too(pipeline: Pipeline) -> None:
    # The local front door: plain http, no X-Forwarded-Proto, the port in Host, the stage in the path.
    event = post_event(json.dumps({"type": "test_echo", "payload": {}}))
    event["headers"] = {"Host": "127.0.0.1:4010", "Content-Type": "application/json"}
    event["multiValueHeaders"] = {k: [v] for k, v in event["headers"].items()}
    event["requestContext"].update(stage="local", path="/local/jobs", domainName="127.0.0.1")

    status, body, headers = invoke(event)

    assert status == 202
    assert headers["Location"] == f"http://127.0.0.1:4010/local/jobs/{body['jobId']}"


def test_a_body_nested_10000_levels_is_400_naming_the_limit(pipeline: Pipeline) -> None:
    body = "[" * 10_000 + "]" * 10_000

    status, response, _ = invoke(post_event(body))

    assert status == 400
    assert response["error"]["code"] == "nesting_too_deep"
    assert str(config.MAX_JSON_DEPTH) in response["error"]["message"]


def test_a_fanout_whose_data_nests_300_levels_is_400(pipeline: Pipeline) -> None:
    status, response, _ = invoke(post_event(json.dumps(fanout({"deep": nested(300)}))))

    assert status == 400
    assert response["error"]["code"] == "nesting_too_deep"
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 0


def test_nesting_up_to_the_limit_is_accepted(pipeline: Pipeline) -> None:
    # The body, the payload and `data` are three levels; `deep` adds the rest.
    at_limit = fanout({"deep": nested(config.MAX_JSON_DEPTH - 3)})
    over = fanout({"deep": nested(config.MAX_JSON_DEPTH - 2)})

    assert invoke(post_event(json.dumps(at_limit)))[0] == 202
    assert invoke(post_event(json.dumps(over)))[0] == 400


def test_a_240_kb_body_of_non_ascii_text_is_stored(pipeline: Pipeline) -> None:
    # 80,000 three-byte characters: 240 KB as UTF-8, but 480 KB escaped as \uXXXX.
    text = "中" * 80_000
    body = json.dumps({"type": "test_echo", "payload": {"value": text}}, ensure_ascii=False)
    assert len(body.encode()) < config.MAX_BODY_BYTES

    status, response, _ = invoke(post_event(body))

    assert status == 202, response
    assert pipeline.job(response["jobId"])["status"] == "pending"


def test_a_lone_surrogate_in_the_body_is_400(pipeline: Pipeline) -> None:
    status, response, _ = invoke(post_event('{"type": "test_echo", "payload": {"value": "\\ud800"}}'))

    assert status == 400
    assert response["error"]["code"] == "malformed_json"
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 0


@pytest.mark.parametrize("body", ["not base64!", base64.b64encode(b"\xff\xfe{").decode()])
def test_a_base64_body_that_is_not_utf8_json_is_400(pipeline: Pipeline, body: str) -> None:
    status, response, _ = invoke(post_event(body, isBase64Encoded=True))

    assert status == 400
    assert response["error"]["code"] == "malformed_json"


def test_a_done_process_file_job_links_each_file_it_wrote_with_an_expiring_url(pipeline: Pipeline) -> None:
    # given an image uploaded the way a client does it, and processed
    image = (Path(__file__).resolve().parents[1] / "assets" / "tiny.png").read_bytes()
    ticket = pipeline.request("POST", "/uploads", {"filename": "tiny.png", "contentType": "image/png"}).body
    assert send(ticket, image).status_code == 204
    job_id = pipeline.submit("process_file", {"key": ticket["key"]})
    pipeline.run_worker()

    # when the job is read
    job = pipeline.job(job_id)

    # then every file it wrote can be fetched without credentials, until the link expires
    assert job["status"] == "done"
    assert [d["key"] for d in job["downloads"]] == job["result"]["keys"]
    for download in job["downloads"]:
        assert download["key"].startswith(f"results/{job_id}/")
        assert f"X-Amz-Expires={config.DOWNLOAD_URL_EXPIRES_SECONDS}&" in download["url"]
        fetched = requests.get(download["url"], timeout=10)
        assert fetched.status_code == 200
        stored = boto3.client("s3").get_object(
            Bucket=pipeline.env[config.ENV_UPLOADS_BUCKET], Key=download["key"]
        )
        assert fetched.content == stored["Body"].read()


def test_a_job_that_wrote_no_files_has_no_downloads(pipeline: Pipeline) -> None:
    job_id = pipeline.submit("test_echo", {"value": "x"})
    pipeline.run_worker()
    assert pipeline.job(job_id)["downloads"] is None


def test_a_job_too_large_to_store_is_413_saying_how_many_bytes_are_allowed(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A body under 256 KiB stays under DynamoDB's 400 KB once stored compactly, so lower the store's limit.
    monkeypatch.setattr(codec, "ITEM_SIZE_LIMIT", 1000)

    status, response, _ = invoke(
        post_event(json.dumps({"type": "test_echo", "payload": {"value": "x" * 2000}}))
    )

    assert status == 413
    assert response["error"]["code"] == "payload_too_large"
    assert response["error"]["message"].endswith("1000 bytes allowed")
    assert boto3.client("dynamodb").scan(TableName=pipeline.table)["Count"] == 0


# An `Idempotency-Key` replay is recognised by what the body says, not how its JSON is laid out; an
# unknown type's refusal lists the types there are; a job's payload reads back as it was submitted.
#
# Found by `make mutate` (mutants of `submit` no test failed on). Each test was first run against the
# one-line break its docstring names, seen to fail, then restored.


def test_a_replay_whose_payload_lists_its_fields_in_another_order_is_the_same_request(
    pipeline: Pipeline,
) -> None:
    """Broken line: `_request_hash`'s `json.dumps(..., sort_keys=True, ...)` without `sort_keys`."""
    headers = {"Idempotency-Key": "order-44"}
    first = pipeline.request(
        "POST",
        "/jobs",
        {"type": "test_flaky", "payload": {"failTimes": 0, "retryAfter": 1.5}},
        headers=headers,
    )
    again = pipeline.request(
        "POST",
        "/jobs",
        {"payload": {"retryAfter": 1.5, "failTimes": 0}, "type": "test_flaky"},
        headers=headers,
    )

    assert (first.status, again.status) == (202, 202)
    assert again.body["jobId"] == first.body["jobId"]


def test_an_unknown_type_is_refused_with_the_types_that_exist(pipeline: Pipeline) -> None:
    """Broken line: `validated_payload`'s `known = ", ".join(...)` as `known = None`."""
    response = pipeline.request("POST", "/jobs", {"type": "no_such_type", "payload": {}})

    assert response.status // 100 == 4
    known = ", ".join(t.name for t in registry.public_types())
    assert known
    assert response.body["error"]["message"] == f"unknown job type 'no_such_type'; known types: {known}"


def test_a_jobs_payload_reads_back_without_the_optional_fields_the_caller_left_out(
    pipeline: Pipeline,
) -> None:
    """Broken line: `validated_payload`'s `model_dump(..., exclude_none=True)` as `exclude_none=False`."""
    payload = {"to": ["ada@example.com"], "subject": "Invoice", "text": "Attached."}

    job = pipeline.job(pipeline.submit("send_email", payload))

    assert job["payload"] == payload
