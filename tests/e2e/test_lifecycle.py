"""The job lifecycle through the running local runtime: HTTP in, the real handlers, moto underneath."""

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests

from lambdas.handlers.rest.security import SECURITY_HEADERS
from lambdas.models.job import NewJob
from lambdas.store import clients
from local_runtime.runtime import LocalRuntime
from tests.e2e.conftest import DLQ_BATCHING_WINDOW, WORKER, WORKER_TIMEOUT, WORKER_VISIBILITY, Client
from tests.support.stores import store_from_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def _batches_with(client: Client, job_id: str) -> list[dict]:
    return [b for b in client.local("batches") if any(job_id in body for body in b["bodies"])]


def _job_of(body: str) -> str | None:
    """The jobId a queued message names (a job's message carries its type and owner too)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("jobId") if isinstance(message, dict) else None


def _settled_batches_with(
    client: Client, job_id: str, settled: Callable[[list[dict]], bool], timeout: float = 20
) -> list[dict]:
    """The batches that carried `job_id`, once `settled` holds for them: the runtime records a batch
    after its invocation returned and its messages were deleted, which can trail the job's last write."""
    deadline = time.monotonic() + timeout
    while True:
        batches = _batches_with(client, job_id)
        if settled(batches) or time.monotonic() > deadline:
            return batches
        time.sleep(0.2)


def test_submitted_job_runs_to_done(client: Client) -> None:
    job_id = client.submit("test_echo", {"value": "hello"})

    job = client.wait_for_status(job_id, {"done", "dead"}, timeout=30)

    assert job["status"] == "done"
    assert job["result"] == {"echo": "hello", "attempt": 1}
    assert [(t["from"], t["to"]) for t in client.transitions(job_id)] == [
        ("new", "pending"),
        ("pending", "processing"),
        ("processing", "done"),
    ]


def test_retry_waits_the_computed_delay_then_succeeds(client: Client) -> None:
    """The job's message is found by its jobId, not by an exact body: since flow control decides
    admission before the claim, a job's message carries its `type` and `owner` beside its `jobId`."""
    # given a job that fails once and asks for at least 3 s before its next attempt
    job_id = client.submit("test_flaky", {"failTimes": 1, "retryAfter": 3}, maxAttempts=3)

    # when it runs to its end
    job = client.wait_for_status(job_id, {"done", "dead"}, timeout=40)

    # then the second attempt started once the delay the worker computed had passed, not sooner,
    # and before the queue's own visibility timeout would have brought it back
    assert job["status"] == "done"
    assert job["result"] == {"succeededOnAttempt": 2}
    logs = [e for e in client.local("logs") if e.get("jobId") == job_id]
    (scheduled,) = [e for e in logs if "delaySeconds" in e]
    retried = next(
        e
        for e in logs
        if e.get("event") == "job_transition"
        and e["from"] == "processing"
        and e["to"] == "pending"
        and e["attempt"] == 1
    )
    second = next(e for e in logs if e.get("event") == "job_transition" and e["attempt"] == 2)
    gap = second["time"] - retried["time"]
    assert scheduled["delaySeconds"] >= 3
    assert scheduled["delaySeconds"] - 0.5 <= gap < WORKER_VISIBILITY + 1
    # The second batch is recorded once its invocation returned, which can trail the job's `done`.
    batches = _settled_batches_with(client, job_id, lambda found: len(found) >= 2)
    receive_counts = [
        b["receiveCounts"][i]
        for b in batches
        for i, body in enumerate(b["bodies"])
        if _job_of(body) == job_id
    ]
    assert receive_counts == [1, 2]


def test_exhausted_job_is_dead_with_one_alert(client: Client) -> None:
    job_id = client.submit("test_always_fail", {"value": "x"}, maxAttempts=2)

    job = client.wait_for_status(job_id, {"done", "dead"}, timeout=40)

    def alerts() -> list[dict]:
        return [a for a in client.local("alerts") if job_id in (a["message"] or "")]

    first = client.wait_until(alerts, timeout=45, what="alert")

    def letters_deleted() -> bool:
        letters = [b for b in _batches_with(client, job_id) if b["function"] == "dead_letter"]
        return bool(letters) and all(set(b["deleted"]) == set(b["messageIds"]) for b in letters)

    # every letter for the job handled and deleted: none can come back after a visibility timeout...
    client.wait_until(letters_deleted, timeout=30, what="the job's letters deleted")
    # ...and one more DLQ batching window (plus its receive) passes without a second alert
    quiet_until = time.monotonic() + DLQ_BATCHING_WINDOW + 2
    while time.monotonic() < quiet_until:
        assert len(alerts()) == 1
        time.sleep(0.3)

    assert job["status"] == "dead"
    assert job["attempts"] == 2
    assert "downstream unavailable" in job["lastError"]
    assert first[0]["subject"]


def test_lost_send_is_repaired_by_the_schedule(
    client: Client, runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a job whose record was written but whose SendMessage never happened
    for name, value in runtime.moto.environment().items():
        monkeypatch.setenv(name, value)
    clients.reset()
    env = runtime.provisioned.function_env("lambdas.handlers.api.handler")
    store = store_from_env(env)
    # The client's own job (a client sees only those): its owner is what the API records for its key.
    known = store.get(client.submit("test_echo", {"value": "owner"}))
    assert known is not None
    job_id = str(uuid.uuid4())
    store.put_new(
        NewJob(
            job_id=job_id,
            job_type="test_echo",
            payload={"value": "lost"},
            max_attempts=3,
            delay_seconds=0,
            owner=known.owner,
        )
    )
    clients.reset()

    # when the recovery schedule runs past the grace period
    job = client.wait_for_status(job_id, {"done", "dead"}, timeout=40)

    # then the sweep re-sent it and the worker finished it
    assert job["status"] == "done"
    assert any(e.get("jobId") == job_id and "re-sent" in e.get("message", "") for e in client.local("logs"))


def test_handler_past_its_timeout_is_killed_and_the_job_finishes_on_redelivery(client: Client) -> None:
    job_id = client.submit("test_slow_first", {"seconds": WORKER_TIMEOUT + 4}, maxAttempts=3)

    job = client.wait_for_status(job_id, {"done", "dead"}, timeout=60)

    assert job["status"] == "done"
    assert job["result"] == {"finishedOnAttempt": 2}
    batches = _settled_batches_with(client, job_id, lambda found: any(b["ok"] for b in found[1:]))
    assert batches[0]["timedOut"]
    assert batches[0]["errorMessage"] == f"Task timed out after {WORKER_TIMEOUT:.2f} seconds"
    assert batches[0]["deleted"] == []
    assert any(b["ok"] for b in batches[1:])
    assert client.local("stats")["functions"]["worker"]["timeouts"] >= 1


def test_batch_with_mixed_outcomes_deletes_exactly_the_successful_messages(
    client: Client, runtime: LocalRuntime
) -> None:
    # given three jobs waiting on the queue while the worker's event source is disabled (the worker's
    # other mapping, its high queue's, carries no job of this test)
    (source,) = [
        s
        for s in runtime.sources
        if s.mapping.function == runtime.provisioned.function(WORKER).logical_id
        and "HighQueue" not in s.mapping.queue
    ]
    source.disable()
    try:
        # receives already in flight end, so none of them can take a job submitted below
        assert source.wait_idle(timeout=30)
        ok_1 = client.submit("test_echo", {"value": "a"})
        flaky = client.submit("test_flaky", {"failTimes": 1, "retryAfter": 2}, maxAttempts=3)
        ok_2 = client.submit("test_echo", {"value": "b"})
    finally:
        # when it is enabled again: one receive takes all three as one batch
        source.enable()

    for job_id in (ok_1, flaky, ok_2):
        client.wait_for_status(job_id, {"done"}, timeout=40)

    # then that batch deleted the two successes and kept the retried one, which came back on its own
    # (a late duplicate of an earlier test's job may ride in the same batch: only ours are judged)
    ours = {ok_1, flaky, ok_2}
    (batch,) = [
        b for b in _batches_with(client, flaky) if ours <= {json.loads(x)["jobId"] for x in b["bodies"]}
    ]
    by_job = {
        json.loads(body)["jobId"]: message
        for body, message in zip(batch["bodies"], batch["messageIds"], strict=True)
    }
    assert set(batch["deleted"]) & {by_job[j] for j in ours} == {by_job[ok_1], by_job[ok_2]}
    later = _settled_batches_with(client, flaky, lambda found: found[-1]["seq"] > batch["seq"])
    redelivered = [b for b in later if b["seq"] > batch["seq"]]
    assert [_messages_of(b, ours) for b in redelivered] == [[by_job[flaky]]]
    assert by_job[flaky] in redelivered[0]["deleted"]


def _messages_of(batch: dict[str, Any], job_ids: set[str]) -> list[str]:
    """The message ids in `batch` that carry one of `job_ids` (other tests' jobs may share a batch)."""
    return [
        message
        for body, message in zip(batch["bodies"], batch["messageIds"], strict=True)
        if json.loads(body)["jobId"] in job_ids
    ]


def test_api_key_is_enforced_like_the_usage_plan(client: Client) -> None:
    url = client.runtime.url + "jobs"

    missing = requests.post(url, json={"type": "test_echo", "payload": {}}, timeout=10)
    wrong = requests.post(
        url, json={"type": "test_echo", "payload": {}}, headers={"x-api-key": "nope"}, timeout=10
    )
    unknown_path = client.get("nowhere")

    # the bodies are the stack's gateway responses, read from the template
    assert (missing.status_code, missing.json()) == (
        403,
        {"error": {"code": "forbidden", "message": "Forbidden"}},
    )
    assert wrong.status_code == 403
    assert (unknown_path.status_code, unknown_path.json()["error"]["code"]) == (404, "not_found")
    # API Gateway's own answers carry the app's security headers, quoted directives intact (seen to
    # fail without the stack's `response_headers=gateway_response_headers()`, and with the reader's
    # `strip("'")` that cut the closing quote of `'none'`)
    for answer in (missing, wrong, unknown_path):
        assert {name: answer.headers.get(name) for name in SECURITY_HEADERS} == SECURITY_HEADERS
    assert (
        client.get(f"jobs/{uuid.uuid4()}").json()["error"]["code"] == "job_not_found"
    )  # the handler answered
