"""What a webhook fan-out asks of AWS: the calls each part makes, counted at botocore's one door.

The figure per delivered endpoint is `bench/calls.py`'s (issue 11: at most 5); this test pins down
where the calls go, so a change that adds a read or a write per delivery fails here, not only in the
benchmark.
"""

from collections import Counter
from typing import Any

import pytest
from botocore.client import BaseClient

from lambdas import config
from lambdas.handlers import worker
from lambdas.store.deliveries import DeliveryLog
from local_runtime.context import LambdaContext
from tests.support.deliveries import every_attempt

pytestmark = pytest.mark.usefixtures("loopback_webhooks")

ENDPOINTS = 4
# The test's own driving: taking the messages off the queue as the event source mapping does.
_DRIVER = {"ReceiveMessage", "DeleteMessage", "DeleteMessageBatch"}


@pytest.fixture
def limit_calls() -> Counter[str]:
    """The calls on the limits table (each delivery's start under its host's limit), counted apart."""
    return Counter()


@pytest.fixture
def in_order() -> list[str]:
    """Every counted call in the order it was made; a limits-table call as `limits.<operation>`."""
    return []


@pytest.fixture
def calls(
    monkeypatch: pytest.MonkeyPatch, stack: Any, limit_calls: Counter[str], in_order: list[str]
) -> Counter[str]:
    counted: Counter[str] = Counter()
    make_call = BaseClient._make_api_call
    limits_table = stack.pipeline.env[config.ENV_LIMITS_TABLE]

    def counting(self: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        if self.meta.endpoint_url.startswith("http://127.0.0.1"):
            # a local runtime another module of this xdist worker started, talking to its own moto
            # server (its schedules tick Scans once a minute): not this pipeline's calls
            return make_call(self, operation, params)
        if params.get("TableName") == limits_table:
            limit_calls[operation] += 1
            in_order.append(f"limits.{operation}")
        elif operation not in _DRIVER:
            counted[operation] += 1
            in_order.append(operation)
        return make_call(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counting)
    return counted


def _run_worker(records: list[dict[str, Any]]) -> dict[str, Any]:
    response: dict[str, Any] = worker.handler({"Records": records}, LambdaContext(function_name="worker"))
    return response


def test_each_delivery_costs_its_claim_and_the_batch_one_transaction_that_finishes_the_parent(
    stack, receiver, calls: Counter[str], limit_calls: Counter[str], in_order: list[str]
) -> None:
    """Broken lines, each seen to fail: `Worker._run`'s `first_run=job.attempt_total == 1 and ...` as
    `first_run=False` (a BatchGetItem for children that cannot exist yet); `WorkerCapabilities.context`'s
    `record = functools.partial(self._record, recorded) if recorded else ...` as `record =
    self._deliveries.record` (a PutItem per delivery); `ClientSecretsCache.signing`'s `with self._lock:`
    as `if True:` (a GetItem, and a PutItem, per thread that asks for the client's secrets before the
    first answer is cached); `JobStore.await_children`'s transaction as its former two UpdateItems (the
    move to waiting, then the arming); `webhook_delivery.run`'s `payload.carried_event() or` removed (a
    GetItem of the parent for its event); `Worker._process_safely` calling `self.process` without the
    message's place in its batch (a transaction per child, and the last child's second one);
    `BatchEndings.end`'s `place.before_waiting()` removed (the slots come back after the write);
    `WorkerCapabilities._create_children` sending no `keyed` keys (a GetItem of each child before its
    claim, to read its host for the limit's key)."""
    pipeline = stack.pipeline
    targets = [{"id": f"ep-{i}", "url": receiver.url(f"/ep/{i}")} for i in range(ENDPOINTS)]
    fanout_id = pipeline.submit(
        "webhook_fanout", {"eventType": "invoice.paid", "data": {"n": 1}, "endpoints": targets}
    )

    calls.clear()
    assert _run_worker(pipeline.receive(pipeline.queue_url)) == {"batchItemFailures": []}
    # its claim; the children written without reading for them (with their counters item), and
    # queued; its move to waiting and the arming of its counters item in one transaction
    assert calls == {"UpdateItem": 1, "BatchWriteItem": 1, "SendMessageBatch": 1, "TransactWriteItems": 1}

    calls.clear()
    in_order.clear()
    children = pipeline.receive(pipeline.queue_url)
    assert len(children) == ENDPOINTS
    assert _run_worker(children) == {"batchItemFailures": []}
    # a claim each (the small event rides in the child: no read of the parent), one read of the
    # client's secrets for the whole batch (and the secrets' first write: this client's first
    # delivery); the children end together: one read of their counters, then one transaction (every
    # outcome and log line, the counters moved once, the parent made done)
    assert calls == {"UpdateItem": ENDPOINTS, "GetItem": 2, "PutItem": 1, "TransactWriteItems": 1}
    # each child gives its host's slot back before it waits for its siblings, not after their write
    assert "limits.UpdateItem" not in in_order[in_order.index("TransactWriteItems") :]

    # the host's limit: a start and a release each; the key's first use is a PutItem, and the batch's
    # threads that lose that race read the item and write over it once
    assert limit_calls["UpdateItem"] >= 2 * ENDPOINTS
    assert (
        limit_calls["UpdateItem"] + limit_calls["PutItem"] + limit_calls["GetItem"]
        <= 2 * ENDPOINTS + 3 * (ENDPOINTS - 1) + 1
    )

    fanout = pipeline.job(fanout_id)
    assert fanout["status"] == "done"
    assert fanout["children"] == {
        "total": ENDPOINTS,
        "pending": 0,
        "delivered": ENDPOINTS,
        "failed": 0,
        "cancelled": 0,
    }
    assert len(receiver.requests) == ENDPOINTS
    log = every_attempt(DeliveryLog(stack.deliveries_table), fanout_id)
    assert sorted(entry.endpoint_id for entry in log) == [t["id"] for t in targets]


def test_a_fan_out_with_a_large_event_waits_in_two_writes_and_its_children_read_the_event(
    stack, receiver, calls: Counter[str]
) -> None:
    """A parent over TRANSACTIONAL_WAIT_MAX_BYTES is not written in a transaction (it would bill twice
    its size to save one call), and an event over CARRIED_EVENT_BYTES is read from the parent, once per
    batch. Broken lines, each seen to fail: `JobStore.await_children`'s `if len(...) <=
    TRANSACTIONAL_WAIT_MAX_BYTES:` as `if True:` (a TransactWriteItems for the large parent);
    `webhook_fanout.run`'s `if len(body) <= CARRIED_EVENT_BYTES` as `if True` (the children's payload
    refuses the large body: the fan-out fails)."""
    pipeline = stack.pipeline
    targets = [{"id": f"ep-{i}", "url": receiver.url(f"/ep/{i}")} for i in range(ENDPOINTS)]
    data = {"notes": "n" * 2048}
    fanout_id = pipeline.submit("webhook_fanout", {"eventType": "e", "data": data, "endpoints": targets})

    calls.clear()
    assert _run_worker(pipeline.receive(pipeline.queue_url)) == {"batchItemFailures": []}
    # its claim, its move to waiting and the arming of its counters item apart
    assert calls == {"UpdateItem": 3, "BatchWriteItem": 1, "SendMessageBatch": 1}

    calls.clear()
    assert _run_worker(pipeline.receive(pipeline.queue_url)) == {"batchItemFailures": []}
    # one read of the parent's event and one of the client's secrets for the whole batch, and the
    # children's one read of their counters before they end together
    assert calls["GetItem"] == 3
    assert calls["TransactWriteItems"] == 1
    assert pipeline.job(fanout_id)["status"] == "done"
    assert len(receiver.requests) == ENDPOINTS
