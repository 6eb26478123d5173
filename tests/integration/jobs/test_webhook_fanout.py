"""webhook_fanout end to end in-process: API -> worker -> one child per endpoint -> a loopback receiver.

The big case is the one the issue names: 200 endpoints, 10% failing twice before they accept, 5%
answering 410. Every endpoint must end delivered or dead exactly once, none may be sent the event again
after it accepted it, and the delivery log must hold every attempt.
"""

import json
from collections import Counter

import boto3
import pytest

from lambdas.jobs.types import webhook_fanout
from lambdas.jobs.types.webhook_delivery import CARRIED_EVENT_BYTES, delivery_id, event_body
from lambdas.jobs.types.webhook_fanout import WebhookFanoutPayload
from lambdas.store.deliveries import DeliveryLog
from tests.support.contexts import job_context
from tests.support.deliveries import every_attempt
from tests.support.stores import store_from_env
from tests.support.webhook_receiver import Reply

OWNER = "k1e2y3i4d5"  # the client key id of tests/events/api_post_job.json: the fan-outs' owner

pytestmark = pytest.mark.usefixtures("loopback_webhooks")


def endpoints(receiver, count: int) -> list[dict[str, str]]:
    return [{"id": f"ep-{i:03d}", "url": receiver.url(f"/ep/{i:03d}")} for i in range(count)]


@pytest.mark.slow
def test_fan_out_to_200_endpoints_with_flaky_and_gone_receivers(stack, receiver):
    # given: 20 endpoints fail twice (503, then 500 with Retry-After), 10 answer 410, the rest accept
    targets = endpoints(receiver, 200)
    flaky = {t["id"] for i, t in enumerate(targets) if i % 10 == 3}
    gone = {t["id"] for i, t in enumerate(targets) if i % 20 == 7}
    for target in targets:
        path = target["url"].split(str(receiver.port), 1)[1]
        if target["id"] in flaky:
            receiver.script(path, Reply(503), Reply(500, headers={"Retry-After": "1"}))
        elif target["id"] in gone:
            receiver.script(path, Reply(410, body=b"endpoint removed"))
    assert (len(flaky), len(gone)) == (20, 10)

    # when
    fanout_id = stack.pipeline.submit(
        "webhook_fanout",
        {"eventType": "order.shipped", "data": {"orderId": "o-1", "items": 3}, "endpoints": targets},
    )
    stack.pipeline.drain(rounds=200)

    # then: the fan-out finished, with exact counts
    fanout = stack.pipeline.job(fanout_id)
    assert fanout["status"] == "done"
    assert fanout["children"] == {"total": 200, "pending": 0, "delivered": 190, "failed": 10, "cancelled": 0}

    # every endpoint ended once: delivered, or dead because it is gone
    store = store_from_env(stack.pipeline.env)
    children = {t["id"]: store.get(delivery_id(fanout_id, t["id"])) for t in targets}
    assert Counter(child.status.value for child in children.values()) == {"done": 190, "dead": 10}
    assert {ep for ep, child in children.items() if child.status.value == "dead"} == gone
    assert all(children[ep].attempts == 3 for ep in flaky)

    # the receiver saw each event exactly as often as the script says, never again after a 2xx or 410
    per_path = Counter(r.path for r in receiver.requests)
    for target in targets:
        path = target["url"].split(str(receiver.port), 1)[1]
        assert per_path[path] == (3 if target["id"] in flaky else 1), target["id"]
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 200

    # the log holds every attempt of the fan-out, each endpoint's in attempt order
    log = DeliveryLog(stack.deliveries_table)
    attempts = every_attempt(log, fanout_id)
    assert len(attempts) == 170 + 20 * 3 + 10
    by_endpoint = {}
    for attempt in attempts:
        by_endpoint.setdefault(attempt.endpoint_id, []).append(
            (attempt.attempt, attempt.http_status, attempt.outcome)
        )
    for ep in flaky:
        assert by_endpoint[ep] == [(1, 503, "retry"), (2, 500, "retry"), (3, 200, "delivered")]
    for ep in gone:
        assert by_endpoint[ep] == [(1, 410, "failed")]


def test_each_delivery_is_signed_and_verifiable(stack, receiver):
    from standardwebhooks import Webhook

    fanout_id = stack.pipeline.submit(
        "webhook_fanout",
        {"eventType": "user.created", "data": {"id": "u1"}, "endpoints": endpoints(receiver, 3)},
    )
    stack.pipeline.drain()
    verifier = Webhook(stack.secret_of(OWNER))
    for request in receiver.requests:
        assert verifier.verify(request.body, request.headers)["data"] == {"id": "u1"}
    assert {r.headers["webhook-id"] for r in receiver.requests} == {
        delivery_id(fanout_id, f"ep-{i:03d}") for i in range(3)
    }


def test_running_the_fan_out_again_creates_no_second_child(stack, receiver):
    # A fan-out that crashed after writing its children runs again: same children, no new messages.
    payload = WebhookFanoutPayload.model_validate(
        {"eventType": "e", "data": {}, "endpoints": endpoints(receiver, 30)}
    )
    first = webhook_fanout.run(payload, job_context("fanout-x", "webhook_fanout", max_attempts=4))
    second = webhook_fanout.run(payload, job_context("fanout-x", "webhook_fanout", attempt=2, max_attempts=4))

    assert first.total == second.total == 30
    sqs = boto3.client("sqs")
    queued = int(
        sqs.get_queue_attributes(
            QueueUrl=stack.pipeline.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]
    )
    assert queued == 30
    store = store_from_env(stack.pipeline.env)
    child = store.get(delivery_id("fanout-x", "ep-007"))
    assert child.parent_id == "fanout-x"
    # the small event rides along (its exact bytes), as built from the context's client and time
    assert child.payload == {
        "endpointId": "ep-007",
        "url": receiver.url("/ep/007"),
        "eventType": "e",
        "eventBody": event_body("e", {}, "", "").decode(),
    }
    assert child.max_attempts == 4


@pytest.mark.parametrize("notes", [0, CARRIED_EVENT_BYTES], ids=["carried", "read-from-the-parent"])
def test_a_delivery_sends_the_fan_outs_event_whether_it_is_carried_or_read(stack, receiver, notes: int):
    """The body a receiver gets is the same bytes whether the child carried it (an event up to
    CARRIED_EVENT_BYTES) or read it from its parent (a larger one): the parent's creation time and
    client, its data. Broken lines, each seen to fail: `webhook_fanout.run`'s `context.created_at` as
    `""` (the carried body's timestamp differs from the parent's); its `if len(body) <=
    CARRIED_EVENT_BYTES` as `if True` (a 1 KB event copied into every child)."""
    data = {"invoice": "in_1", "notes": "n" * notes}
    fanout_id = stack.pipeline.submit(
        "webhook_fanout", {"eventType": "invoice.paid", "data": data, "endpoints": endpoints(receiver, 2)}
    )
    stack.pipeline.drain()

    store = store_from_env(stack.pipeline.env)
    parent = store.get(fanout_id)
    expected = event_body("invoice.paid", data, parent.created_at, OWNER)
    assert [r.body for r in receiver.requests] == [expected, expected]
    child = store.get(delivery_id(fanout_id, "ep-000"))
    assert ("eventBody" in child.payload) is (notes == 0)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.8/hook",
        "http://[::ffff:127.0.0.1]/",
        "ftp://x.test/",
    ],
)
def test_refused_endpoints_are_a_422_at_submission(stack, url):
    response = stack.pipeline.request(
        "POST",
        "/jobs",
        {
            "type": "webhook_fanout",
            "payload": {"eventType": "e", "data": {}, "endpoints": [{"id": "a", "url": url}]},
        },
    )
    assert response.status == 422
    assert response.body["error"]["code"] == "invalid_payload"
    assert "endpoints[0] (a)" in response.body["error"]["message"]


def test_delivery_jobs_cannot_be_submitted_directly(stack, receiver):
    response = stack.pipeline.request(
        "POST",
        "/jobs",
        {"type": "webhook_delivery", "payload": {"endpointId": "a", "url": receiver.url("/")}},
    )
    assert response.status == 422
    assert response.body["error"]["code"] == "unknown_job_type"


@pytest.mark.parametrize(
    "payload",
    [
        {"eventType": "e", "data": {}, "endpoints": []},
        {"eventType": "e", "data": {}, "endpoints": [{"id": "a", "url": "https://x.test/"}] * 2},
        {
            "eventType": "e",
            "data": {},
            "endpoints": [{"id": f"{i}", "url": "https://x.test/"} for i in range(1001)],
        },
        {"eventType": "has spaces", "data": {}, "endpoints": [{"id": "a", "url": "https://x.test/"}]},
        {"eventType": "e", "data": [1, 2], "endpoints": [{"id": "a", "url": "https://x.test/"}]},
        {"eventType": "e", "data": {}, "endpoints": [{"id": "a", "url": "https://x.test/", "secret": "s"}]},
    ],
)
def test_malformed_fan_outs_are_a_422(stack, payload):
    response = stack.pipeline.request("POST", "/jobs", {"type": "webhook_fanout", "payload": payload})
    assert response.status == 422


def _submit_fanout(stack, data: dict, endpoints: list[dict[str, str]]):
    payload = {"eventType": "invoice.paid", "data": data, "endpoints": endpoints}
    return stack.pipeline.request("POST", "/jobs", {"type": "webhook_fanout", "payload": payload})


@pytest.mark.parametrize(
    "spelling",
    [
        "http://127.0.0.1:{port}/ep/1",  # the same URL under another id
        "http://127.0.0.1.:{port}/ep/1",  # a trailing dot names the same host
        "HTTP://127.0.0.1:{port}/ep/1",
    ],
)
def test_a_url_named_twice_is_a_422_whatever_the_ids(stack, receiver, spelling):
    """Seen to fail against `check_submission` without its same-URL refusal (202: the receiver would
    have been sent the event twice per attempt)."""
    endpoints = [
        {"id": "a", "url": receiver.url("/ep/1")},
        {"id": "b", "url": receiver.url("/ep/2")},
        {"id": "c", "url": spelling.format(port=receiver.port)},
    ]
    response = _submit_fanout(stack, {}, endpoints)
    assert response.status == 422
    assert response.body["error"] == {
        "code": "invalid_payload",
        "message": "endpoints[2] (c) has the same URL as a; each URL is sent to once",
    }
    assert receiver.requests == []


def test_endpoints_times_event_size_is_bounded_with_the_numbers_in_the_message(stack, receiver):
    """Seen to fail against `check_submission` without its `_check_volume` call (202 for 48 x 210 KB,
    10 MB a round and 100 MB over ten attempts)."""
    data = {"blob": "x" * 210_000}
    size = len(
        json.dumps(
            {"event": "invoice.paid", "client": "", "data": data, "timestamp": "2026-12-01T00:00:00.000Z"},
            separators=(",", ":"),
        )
    )
    many = [{"id": f"ep-{i}", "url": receiver.url(f"/ep/{i}")} for i in range(48)]

    response = _submit_fanout(stack, data, many)

    assert response.status == 422
    assert response.body["error"]["message"] == (
        f"48 endpoints x {size:,} bytes of event = {48 * size:,} bytes per round of deliveries; "
        "the limit is 10,000,000"
    )
    # the same event to 47 endpoints fits
    assert _submit_fanout(stack, data, many[:47]).status == 202
