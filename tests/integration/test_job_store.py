"""The jobs and deliveries stores against moto: what an item holds, its size, claims, batches."""

import json
import time
from typing import Any

import boto3
import pytest

from lambdas import config
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import JobStatus, NewJob
from lambdas.store import batches, clients
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.errors import ITEM_SIZE_LIMIT, ItemTooLargeError
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline
from tests.support.stores import store_from_env

TTL_DAYS = 3


def store(pipeline: Pipeline, clock: Any = time.time) -> JobStore:
    return store_from_env(pipeline.env, clock=clock)


def raw_item(pipeline: Pipeline, job_id: str) -> dict[str, Any]:
    return boto3.client("dynamodb").get_item(TableName=pipeline.table, Key={"jobId": {"S": job_id}})["Item"]


def new_job(job_id: str, payload: dict[str, Any]) -> NewJob:
    return NewJob(job_id=job_id, job_type="test_echo", payload=payload, max_attempts=3)


def test_a_240_kb_non_ascii_payload_is_stored_as_utf_8_not_escaped(pipeline: Pipeline) -> None:
    text = "é" * 120_000  # 240 KB in UTF-8; 720 KB as \u00e9 escapes

    job = store(pipeline).put_new(new_job("big", {"text": text}))

    stored = raw_item(pipeline, "big")["payload"]["S"]
    assert len(stored.encode("utf-8")) < 241_000
    assert "\\u" not in stored
    assert job.payload == {"text": text}
    assert store(pipeline).get("big") == job


def test_a_payload_over_the_item_limit_is_refused_with_the_numbers(pipeline: Pipeline) -> None:
    with pytest.raises(ItemTooLargeError) as refused:
        store(pipeline).put_new(new_job("huge", {"text": "日" * 140_000}))  # 420 KB in UTF-8

    assert refused.value.limit == ITEM_SIZE_LIMIT == 409_600
    assert 420_000 < refused.value.size < 421_000
    assert str(ITEM_SIZE_LIMIT) in str(refused.value)
    assert store(pipeline).get("huge") is None


def test_a_lone_surrogate_is_kept_as_a_json_escape(pipeline: Pipeline) -> None:
    job = store(pipeline).put_new(new_job("surrogate", {"text": "\ud800"}))

    assert job.payload == {"text": "\ud800"}
    assert raw_item(pipeline, "surrogate")["payload"]["S"] == '{"text":"\\ud800"}'


def test_times_are_iso_8601_utc_with_z(pipeline: Pipeline) -> None:
    job = store(pipeline, clock=lambda: 1_796_000_000.5).put_new(new_job("timed", {}))

    assert job.created_at == job.updated_at == "2026-11-30T00:53:20.500Z"


def test_a_claim_says_when_it_took_over_an_expired_lease(pipeline: Pipeline) -> None:
    now = [time.time()]
    jobs = store(pipeline, clock=lambda: now[0])
    jobs.put_new(new_job("lease", {}))
    first = jobs.claim_attempt("lease", lease_seconds=60)
    now[0] += 61

    second = jobs.claim_attempt("lease", lease_seconds=60)

    assert (first.previous, first.job.attempts) == (JobStatus.PENDING, 1)
    assert (second.previous, second.job.attempts) == (JobStatus.PROCESSING, 2)
    assert second.job == jobs.get("lease")


def test_children_left_unprocessed_by_dynamodb_are_written_on_a_later_round(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    held_back: list[dict[str, Any]] = []
    sleeps: list[float] = []

    def hold_back_the_last(params: dict[str, Any], **_: Any) -> None:
        for requests in params["RequestItems"].values():
            if len(requests) > 1:
                held_back.append(requests.pop())

    def report_held_back(parsed: dict[str, Any], **_: Any) -> None:
        if held_back:
            parsed["UnprocessedItems"] = {pipeline.table: [held_back.pop()]}

    events = clients.client("dynamodb").meta.events
    events.register("provide-client-params.dynamodb.BatchWriteItem", hold_back_the_last)
    events.register("after-call.dynamodb.BatchWriteItem", report_held_back)
    monkeypatch.setattr(time, "sleep", sleeps.append)
    children = [new_job(f"child-{i}", {"i": i}) for i in range(30)]

    written = store(pipeline).create_children(children)

    assert written == [c.job_id for c in children]
    assert all(store(pipeline).get(c.job_id) is not None for c in children)
    assert sleeps == [batches.FIRST_BACKOFF_SECONDS] * 2  # one re-send for each chunk of 25


def test_a_batch_that_dynamodb_keeps_refusing_fails_after_bounded_rounds(pipeline: Pipeline) -> None:
    """The error's text says why: a fan-out's worker stores it as the job's `lastError`. Broken line:
    `_until_processed`'s (store/batches.py) `raise UnprocessedError(f"...")` as `UnprocessedError(None)`."""
    sleeps: list[float] = []

    sent: list[dict[str, Any]] = []

    def refuse_everything(parsed: dict[str, Any], **_: Any) -> None:
        parsed["UnprocessedItems"] = sent[-1]

    events = clients.client("dynamodb").meta.events
    events.register(
        "provide-client-params.dynamodb.BatchWriteItem",
        lambda params, **_: sent.append(params["RequestItems"]),
    )
    events.register("after-call.dynamodb.BatchWriteItem", refuse_everything)
    item = {"jobId": {"S": "x"}}

    left = f"DynamoDB left part of a batch unprocessed after {batches.MAX_ROUNDS} rounds"
    with pytest.raises(batches.UnprocessedError, match=f"^{left}$"):
        batches.put_all(clients.client("dynamodb"), pipeline.table, [item], sleep=sleeps.append)

    assert len(sleeps) == batches.MAX_ROUNDS - 1
    assert sleeps == sorted(sleeps)
    assert max(sleeps) <= 1.0


def test_a_delivery_attempt_expires_with_the_finished_jobs_retention(pipeline: Pipeline) -> None:
    table = pipeline.env[config.ENV_DELIVERIES_TABLE]
    DeliveryLog(table, ttl_days=TTL_DAYS, clock=lambda: 1_000_000.0).record(
        DeliveryAttempt(
            "f-1", "d-1", "ep-1", "evt", 1, "2026-11-30T00:00:00.000Z", DeliveryOutcome.DELIVERED, 12
        )
    )

    items = boto3.client("dynamodb").scan(TableName=table)["Items"]

    assert [item["expiresAt"] for item in items] == [{"N": str(1_000_000 + TTL_DAYS * 86_400)}]
    assert json.dumps(DeliveryLog(table).for_fanout("f-1")[0].attempted_at) == '"2026-11-30T00:00:00.000Z"'
