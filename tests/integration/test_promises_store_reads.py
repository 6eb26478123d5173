"""What the store's readers hand back: the delivery log's lines, an upload's stored metadata, a job.

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from typing import Any

import boto3
import pytest
import requests

from lambdas import config
from lambdas.models.api import status_time
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.store import clients, codec, schema
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.errors import NotClaimableError
from lambdas.store.jobs import JobStore
from lambdas.store.uploads import Uploads
from tests.support.pipeline import Pipeline
from tests.support.stores import store_from_env


def _attempt(fanout_id: str, attempted_at: str) -> DeliveryAttempt:
    return DeliveryAttempt(
        fanout_id=fanout_id,
        delivery_id=f"{fanout_id}-delivery",
        endpoint_id="ep-shared",
        event_type="invoice.paid",
        attempt=1,
        attempted_at=attempted_at,
        outcome=DeliveryOutcome.DELIVERED,
        latency_ms=12,
        http_status=200,
    )


def test_an_endpoints_attempts_in_two_fan_outs_each_name_their_fan_out(pipeline: Pipeline) -> None:
    """Broken line: `_from_item`'s (store/deliveries.py) `fanout_id=item[schema.DELIVERIES_PK]` as
    `fanout_id=None`."""
    log = DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE])
    older = _attempt("fan-a", "2026-11-30T10:00:00.000Z")
    newer = _attempt("fan-b", "2026-11-30T10:05:00.000Z")
    log.record(older)
    log.record(newer)

    assert log.for_fanout("fan-a") == [older]
    assert log.for_fanout("fan-b") == [newer]


def test_head_reports_the_size_and_content_type_the_client_uploaded(pipeline: Pipeline) -> None:
    """Broken line: `Uploads.head`'s (store/uploads.py) `content_type=response.get("ContentType")` as
    `content_type=None`."""
    uploads = Uploads(pipeline.env[config.ENV_UPLOADS_BUCKET])
    ticket = uploads.presign_put("notes.txt", "text/plain")
    sent = requests.put(ticket.url, data=b"twelve bytes", headers=ticket.headers, timeout=10)
    assert sent.status_code == 200

    stored = uploads.head(ticket.key)

    assert (stored.size, stored.content_type) == (12, "text/plain")


def test_a_job_read_right_after_its_write_sees_it_though_replicas_lag(pipeline: Pipeline) -> None:
    """An eventually consistent read may miss a write that just completed (DynamoDB's documented
    model); moto's reads never lag, so here every read that does not ask for consistency finds nothing.
    Broken line: `JobTable.get`'s (store/job_table.py) `ConsistentRead=True` dropped."""
    asked: list[bool] = []

    def note_consistency(params: dict[str, Any], **_: Any) -> None:
        asked.append(params.get("ConsistentRead") is True)

    def lag_unless_consistent(parsed: dict[str, Any], **_: Any) -> None:
        if not asked[-1]:
            parsed.pop("Item", None)

    events = clients.client("dynamodb").meta.events
    events.register("provide-client-params.dynamodb.GetItem", note_consistency)
    events.register("after-call.dynamodb.GetItem", lag_unless_consistent)
    store = store_from_env(pipeline.env)
    store.put_new(NewJob(job_id="j", job_type="echo", payload={}, max_attempts=3, owner="o"))

    job = store.get("j")

    assert job is not None
    assert job.status is JobStatus.PENDING
    assert asked == [True]


def test_a_dead_job_read_back_says_whether_its_alert_was_sent(pipeline: Pipeline) -> None:
    """The worker drops a duplicate message for an alerted dead job instead of forwarding it to the
    dead-letter queue again; it reads `alerted` from the claim's refusal. Broken line: `job_from_values`'
    (store/codec.py) `alerted=ALERTED_AT in raw` dropped (never alerted)."""
    store = store_from_env(pipeline.env)
    store.put_new(NewJob(job_id="j", job_type="echo", payload={}, max_attempts=1, owner="o"))
    store.fail(store.claim("j", 60), "boom")
    assert not _read(store, "j").alerted

    store.mark_alerted("j")

    assert _read(store, "j").alerted
    with pytest.raises(NotClaimableError) as refused:
        store.claim("j", 60)
    assert refused.value.job is not None
    assert refused.value.job.alerted


def test_a_job_stored_without_a_status_time_reports_its_last_update_instead(pipeline: Pipeline) -> None:
    """An item written before `statusAt` existed. Broken line: `job_from_values`' (store/codec.py)
    `int(raw.get(schema.STATUS_AT, 0))` with the default 1 (the API would say the status was entered
    in 1970)."""
    store = store_from_env(pipeline.env)
    store.put_new(NewJob(job_id="j", job_type="echo", payload={}, max_attempts=1, owner="o"))
    boto3.client("dynamodb").update_item(
        TableName=pipeline.table, Key=codec.key("j"), UpdateExpression=f"REMOVE {schema.STATUS_AT}"
    )

    job = _read(store, "j")

    assert status_time(job) == job.updated_at


def _read(store: JobStore, job_id: str) -> Job:
    job = store.get(job_id)
    assert job is not None
    return job
