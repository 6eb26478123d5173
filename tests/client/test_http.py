"""Client against a real HTTP server on 127.0.0.1 playing the API (tests/support/webhook_receiver.py)."""

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from offload_client import (
    ApiError,
    Client,
    Conflict,
    IncompleteAnswer,
    InvalidRequest,
    NotFound,
    RateLimited,
    Unreachable,
    WaitTimeout,
)
from offload_client.aws import SigV4Auth

from tests.support.webhook_receiver import Receiver, Reply

# What the API always sends of a job (the fields JobView and JobSummary require).
_JOB = {
    "jobId": "j-1",
    "type": "t",
    "status": "pending",
    "attempts": 1,
    "maxAttempts": 1,
    "createdAt": "2026-01-01T00:00:00Z",
    "updatedAt": "2026-01-01T00:00:00Z",
    "statusAt": "2026-01-01T00:00:00Z",
    "priority": "normal",
}


def _json(document: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, {"content-type": "application/json", **headers}, json.dumps(document).encode())


def _error(status: int, code: str, message: str, **headers: str) -> Reply:
    return _json({"error": {"code": code, "message": message}}, status, **headers)


@pytest.fixture
def api() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def client(api: Receiver, slept: list[float]) -> Client:
    return Client(api.url("/v1/"), "k-1", timeout=5, sleep=slept.append)


def test_a_submit_refused_429_is_retried_after_retry_after_with_the_same_idempotency_key(
    api: Receiver, client: Client, slept: list[float]
) -> None:
    """Seen to fail with submit sending an empty key (`or ""` for `or str(uuid4())`), with the key left
    out (the 503 was then not retried) and with Retry-After ignored (backoff 0.5 s slept instead)."""
    api.script(
        "/v1/jobs",
        _error(429, "rate_limited", "slow down", **{"Retry-After": "7"}),
        _error(503, "unavailable", "busy"),
        _json({"jobId": "j-1", "status": "pending"}, 202),
    )

    submitted = client.submit("send_email", {"to": "a@example.com"}, max_attempts=3, delay_seconds=5)

    assert submitted.job_id == "j-1"
    sent = api.to("/v1/jobs")
    keys = {request.headers["idempotency-key"] for request in sent}
    assert len(sent) == 3
    assert len(keys) == 1
    assert len(keys.pop()) >= 32  # a uuid4: unique to this submit
    assert slept[0] == 7
    assert json.loads(sent[0].body) == {
        "type": "send_email",
        "payload": {"to": "a@example.com"},
        "maxAttempts": 3,
        "delaySeconds": 5,
    }
    assert sent[0].headers["x-api-key"] == "k-1"


def test_a_priority_is_sent_as_given_and_left_to_the_api_when_not(api: Receiver, client: Client) -> None:
    """Seen to fail with `submit`'s `body["priority"] = priority` left out."""
    api.script("/v1/jobs", _json({"jobId": "j-1", "status": "pending"}, 202))
    api.script("/v1/jobs", _json({"jobId": "j-2", "status": "pending"}, 202))
    client.submit("send_email", {}, priority="high")
    client.submit("send_email", {})
    first, second = (json.loads(r.body) for r in api.to("/v1/jobs"))
    assert first["priority"] == "high"
    assert "priority" not in second


def test_a_caller_key_is_sent_as_given(api: Receiver, client: Client) -> None:
    api.script("/v1/jobs", _json({"jobId": "j-1", "status": "pending"}, 202))
    client.submit("send_email", {}, idempotency_key="order-42")
    assert api.to("/v1/jobs")[0].headers["idempotency-key"] == "order-42"


def test_429_after_every_retry_raises_rate_limited_with_its_retry_after(
    api: Receiver, client: Client
) -> None:
    api.script("/v1/stats", *[_error(429, "rate_limited", "slow down", **{"Retry-After": "2"})] * 4)
    with pytest.raises(RateLimited) as raised:
        client.stats()
    assert (raised.value.code, raised.value.retry_after, raised.value.status) == ("rate_limited", 2, 429)
    assert len(api.to("/v1/stats")) == 4  # the first try and three retries


def test_a_5xx_on_a_post_without_a_key_is_not_repeated(api: Receiver, client: Client) -> None:
    """A retry or cancel may have happened before the 5xx: repeating it could act twice."""
    api.script("/v1/jobs/j-1/retry", _error(500, "internal", "oops"))
    with pytest.raises(Exception, match="answered 500"):
        client.retry("j-1")
    assert len(api.to("/v1/jobs/j-1/retry")) == 1


def test_errors_carry_the_api_code_and_message(api: Receiver, client: Client) -> None:
    """Seen to fail with 404 mapped to the plain ApiError."""
    api.script("/v1/jobs/nope", _error(404, "not_found", "no job nope"))
    api.script("/v1/jobs/j-1/retry", _error(409, "not_retryable", "job j-1 is done"))
    api.script("/v1/jobs", _error(422, "invalid_request", "payload.to: required"))
    with pytest.raises(NotFound) as missing:
        client.get("nope")
    assert missing.value.code == "not_found"
    with pytest.raises(Conflict) as conflict:
        client.retry("j-1")
    assert conflict.value.code == "not_retryable"
    with pytest.raises(InvalidRequest) as invalid:
        client.submit("send_email", {})
    assert invalid.value.message == "payload.to: required"


def test_list_goes_on_through_an_empty_page_that_has_a_next_cursor(api: Receiver, client: Client) -> None:
    """Seen to fail with the walk stopping at the first empty page."""
    entry = {**_JOB, "status": "dead"}
    api.script("/v1/jobs?status=dead&limit=100", _json({"jobs": [], "nextCursor": "c1"}))
    api.script("/v1/jobs?status=dead&limit=100&cursor=c1", _json({"jobs": [entry], "nextCursor": "c2"}))
    api.script("/v1/jobs?status=dead&limit=100&cursor=c2", _json({"jobs": [{**entry, "jobId": "j-2"}]}))

    assert [job.job_id for job in client.list(status="dead")] == ["j-1", "j-2"]


def test_wait_polls_until_a_terminal_state_and_gives_up_after_its_timeout(
    api: Receiver, client: Client
) -> None:
    job = {**_JOB, "status": "processing"}
    api.script("/v1/jobs/j-1", _json(job), _json({**job, "status": "done", "result": {"ok": True}}))
    assert client.wait("j-1", timeout=60).result == {"ok": True}

    api.script("/v1/jobs/j-2", *[_json({**job, "jobId": "j-2"})] * 3)
    with pytest.raises(WaitTimeout) as raised:
        client.wait("j-2", timeout=0)
    assert raised.value.job.status == "processing"


def test_a_refused_connection_is_retried_with_backoff_then_raised(slept: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    client = Client(f"http://127.0.0.1:{port}/v1", "k", retries=2, backoff=0.5, sleep=slept.append)
    with pytest.raises(Unreachable, match="Connection refused"):
        client.get("j-1")
    assert slept == [0.5, 1.0]


@pytest.mark.parametrize("signed", [False, True], ids=["api key", "SigV4"])
def test_a_redirect_is_refused_and_the_key_never_reaches_another_host(
    api: Receiver, slept: list[float], signed: bool
) -> None:
    """requests follows a redirect and re-sends custom headers (x-api-key, X-Amz-Security-Token) to
    the new host. Seen to fail with `allow_redirects=False` removed (the other host got the key)."""
    with Receiver() as elsewhere:
        api.script("/v1/jobs", Reply(307, {"location": elsewhere.url("/steal")}, b""))
        auth = SigV4Auth("eu-west-1") if signed else None
        client = Client(api.url("/v1/"), None if signed else "k-1", auth=auth, timeout=5, sleep=slept.append)

        with pytest.raises(ApiError, match=r"answered a redirect \(307\) to http://127\.0\.0\.1:\d+/steal"):
            client.submit("send_email", {})

        assert elsewhere.requests == []
        assert len(api.to("/v1/jobs")) == 1


def test_a_success_answer_without_its_documented_fields_is_an_error(api: Receiver, client: Client) -> None:
    """A 200 from something that is not the API (a proxy's page as JSON) is not a job. Seen to fail with
    `from_api`'s check of the required fields removed (a Submitted with job_id None)."""
    api.script("/v1/jobs", _json({"status": "pending"}, 200))
    with pytest.raises(IncompleteAnswer, match="answered a Submitted without its documented jobId"):
        client.submit("send_email", {})
    api.script("/v1/jobs/j-1", _json({"jobId": "j-1"}))
    with pytest.raises(IncompleteAnswer, match="without its documented type, status, attempts"):
        client.get("j-1")


def test_retry_and_a_large_fan_outs_cancel_are_the_202_the_api_answers(api: Receiver, client: Client) -> None:
    """POST /jobs/{jobId}/retry answers 202 with the job's id and status (SubmitJobResponse), as does a
    cancel handed to an ops job. Seen to fail with `retry` reading a Job (IncompleteAnswer on every
    successful retry, since the client refuses an answer without its schema's required fields)."""
    api.script("/v1/jobs/j-1/retry", _json({"jobId": "j-1", "status": "pending"}, 202))
    retried = client.retry("j-1")
    assert (retried.job_id, retried.status) == ("j-1", "pending")
    api.script("/v1/jobs/j-2/cancel", _json({"jobId": "ops-1", "status": "pending"}, 202))
    assert client.cancel("j-2").job_id == "ops-1"
    api.script("/v1/jobs/j-3/cancel", _json({"jobId": "j-3", "status": "cancelled", "attempts": 1}))
    with pytest.raises(IncompleteAnswer, match="answered a Job without its documented type"):
        client.cancel("j-3")


def test_send_event_posts_the_name_and_data_and_a_refusal_is_a_conflict(
    api: Receiver, client: Client
) -> None:
    """Seen failing with `send_event` posting to the job's `cancel` path."""
    api.script(
        "/v1/jobs/j-1/events",
        _json({"jobId": "j-1", "name": "converted"}, 202),
        _error(409, "not_waiting", "job j-1 is done, not waiting for event 'converted'"),
    )
    accepted = client.send_event("j-1", "converted", {"plan": "pro"})
    assert (accepted.job_id, accepted.name) == ("j-1", "converted")
    assert json.loads(api.requests[0].body) == {"name": "converted", "data": {"plan": "pro"}}
    with pytest.raises(Conflict) as refused:
        client.send_event("j-1", "converted")
    assert refused.value.code == "not_waiting"
