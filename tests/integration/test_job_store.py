"""The jobs and deliveries stores against moto: what an item holds, its size, claims, batches."""

import json
import time
import uuid
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import AwaitChildren, JobContext, JobType
from lambdas.lifecycle.requests.reads import list_query
from lambdas.models.api import status_time
from lambdas.models.caller import Caller
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import Attempt, AttemptOutcome, Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.models.uploads import UploadAccessDeniedError
from lambdas.store import batches, clients, codec, schema
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.errors import ITEM_SIZE_LIMIT, ItemTooLargeError, NotClaimableError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.uploads import Uploads
from tests.support.deliveries import every_attempt
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env
from tests.support.transitions import Lines, transitions
from tests.support.uploads import upload

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
        for writes in params["RequestItems"].values():
            if len(writes) > 1:
                held_back.append(writes.pop())

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
    assert (
        json.dumps(every_attempt(DeliveryLog(table), "f-1")[0].attempted_at) == '"2026-11-30T00:00:00.000Z"'
    )


# Job records over their life: expiry only once finished, and fan-out parents that always finish.
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.


pytestmark = pytest.mark.usefixtures("test_types")

DAY = 86_400


def _expiry(pipeline: Pipeline, job_id: str) -> int | None:
    """The job item's TTL attribute, named as the table's TTL setting (from the template) names it."""
    ddb = boto3.client("dynamodb")
    attribute = ddb.describe_time_to_live(TableName=pipeline.table)["TimeToLiveDescription"]["AttributeName"]
    item = ddb.get_item(TableName=pipeline.table, Key={schema.JOBS_PK: {"S": job_id}}, ConsistentRead=True)[
        "Item"
    ]
    return int(item[attribute]["N"]) if attribute in item else None


def test_only_finished_jobs_carry_an_expiry(pipeline: Pipeline, store: JobStore, clock: Clock) -> None:
    """Broken line: `JobItems.state`'s (store/codec.py) `if status.finished:` as `if True:` (every
    state expires)."""
    ttl_days = int(pipeline.env[config.ENV_FINISHED_TTL_DAYS])
    retried = pipeline.submit("test_echo", {})
    assert _expiry(pipeline, retried) is None  # pending
    attempt = store.claim(retried, lease_seconds=60)
    assert _expiry(pipeline, retried) is None  # processing
    store.retry(attempt, "transient", delay_seconds=5)
    assert _expiry(pipeline, retried) is None  # pending again, waiting out its backoff
    clock.advance(6)
    store.complete(store.claim(retried, lease_seconds=60), {"ok": True})
    assert _expiry(pipeline, retried) == int(clock.now) + ttl_days * DAY

    dead = pipeline.submit("test_echo", {})
    store.fail(store.claim(dead, lease_seconds=60), "permanent")
    assert _expiry(pipeline, dead) == int(clock.now) + ttl_days * DAY


class _Children(BaseModel):
    total: int


def _hand_over(payload: _Children, context: JobContext) -> AwaitChildren:
    return AwaitChildren(total=payload.total, result={"handedOver": payload.total})


@pytest.fixture
def parent_with_children(pipeline: Pipeline, store: JobStore) -> Any:
    """A parent job whose message is taken, and its children (one per job type given), stored and queued.

    Returns (the parent's record, {child job type: the child's record}).
    """
    registry.register(JobType("test_hand_over", _Children, _hand_over))

    def make(child_types: list[str]) -> tuple[str, dict[str, Any], dict[str, dict[str, Any]]]:
        parent_id = pipeline.submit("test_hand_over", {"total": len(child_types)})
        (parent_record,) = pipeline.receive(pipeline.queue_url)
        stored = store.get(parent_id)
        owner = stored.owner if stored else ""
        children = {
            kind: NewJob(
                job_id=str(uuid.uuid4()),
                job_type=kind,
                payload={},
                max_attempts=1,
                parent_id=parent_id,
                owner=owner,  # children have their parent's owner, as the worker writes them
            )
            for kind in child_types
        }
        created = store.create_children(list(children.values()))
        for kind in child_types:
            JobQueue(pipeline.queue_url).send_new(
                kind,
                owner,
                [c.job_id for c in children.values() if c.job_type == kind and c.job_id in created],
            )
        records = pipeline.receive(pipeline.queue_url)
        by_id = {json.loads(r["body"])["jobId"]: r for r in records}
        return parent_id, parent_record, {kind: by_id[c.job_id] for kind, c in children.items()}

    return make


def test_a_parent_finishes_when_its_last_child_dies(
    pipeline: Pipeline, parent_with_children: Any, log_lines: Lines
) -> None:
    """Broken lines: `children._NOT_LAST` as `f"attribute_exists({schema.JOBS_PK})"` (before the last child
    learned it from its transaction: `Worker._dead`'s `self._settle_parent(job)` removed); the parent's
    `waiting -> done` line logged without its job type (`worker._log_finished_parent`)."""
    parent_id, parent, children = parent_with_children(["test_echo", "test_permanent"])
    pipeline.run_worker([parent])
    assert pipeline.job(parent_id)["status"] == "waiting"
    assert _expiry(pipeline, parent_id) is None  # a waiting parent is live

    pipeline.run_worker([children["test_echo"]])
    assert pipeline.job(parent_id)["status"] == "waiting"
    pipeline.run_worker([children["test_permanent"]])

    job = pipeline.job(parent_id)
    assert job["status"] == "done"  # at once, not at the next recovery sweep
    assert job["children"] == {"total": 2, "pending": 0, "delivered": 1, "failed": 1, "cancelled": 0}
    assert job["result"] == {"handedOver": 2}
    assert transitions(log_lines(), parent_id)[-1] == (
        f"job {parent_id} waiting -> done",
        "test_hand_over",
        "waiting",
        "done",
        1,
        None,
    )


def test_a_parent_whose_children_all_finished_before_it_waits_is_done_at_once(
    pipeline: Pipeline, parent_with_children: Any
) -> None:
    """Broken line: `Worker._await`'s `parents.finish_if_complete(self._store, waiting)` removed (earlier:
    `Worker._succeed`'s `parents.settle(...)` after `await_children`); and `JobStore.await_children`'s
    transaction without its `#childrenFinished < :total` condition (the parent armed as if a child were
    still running, and left waiting)."""
    parent_id, parent, children = parent_with_children(["test_echo", "test_permanent"])
    pipeline.run_worker(list(children.values()))  # the children were quicker than their parent

    pipeline.run_worker([parent])

    job = pipeline.job(parent_id)
    assert job["status"] == "done"
    assert job["children"] == {"total": 2, "pending": 0, "delivered": 1, "failed": 1, "cancelled": 0}


def test_children_of_a_parent_that_is_gone_still_finish(
    pipeline: Pipeline, parent_with_children: Any
) -> None:
    """Broken line: `ChildEndings._end_child`'s `if seen is None:` as `if False:` (a missing parent is
    taken for a waiting one; earlier: `JobStore._finish`'s `if cancelled.failed != {"parent"}:`)."""
    parent_id, parent, children = parent_with_children(["test_echo", "test_permanent"])
    pipeline.run_worker([parent])
    # the parent's item is gone (deleted, or expired after being declared dead) while its children run
    boto3.client("dynamodb").delete_item(TableName=pipeline.table, Key={schema.JOBS_PK: {"S": parent_id}})

    assert pipeline.run_worker(list(children.values())) == {"batchItemFailures": []}

    done = pipeline.job(json.loads(children["test_echo"]["body"])["jobId"])
    dead = pipeline.job(json.loads(children["test_permanent"]["body"])["jobId"])
    assert [(done["status"], done["attempts"]), (dead["status"], dead["attempts"])] == [
        ("done", 1),
        ("dead", 1),
    ]
    assert dead["lastError"] == "input can never succeed: ok"
    assert pipeline.request("GET", f"/jobs/{parent_id}").status == 404


# What the store writes when an attempt ends or a caller retries a dead job: the attempt's history
# entry (the API's `history`) and the keys the job is listed under.
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.


LEASE = 60


def _new(store: JobStore, job_id: str, owner: str) -> None:
    store.put_new(NewJob(job_id=job_id, job_type="echo", payload={}, max_attempts=3, owner=owner))


def test_an_ended_attempts_history_says_when_it_started_and_when_it_ended(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Broken lines: `history_entry`'s (store/codec.py) `"startedAt": started_at or iso_time(ended)` as
    `started_at and iso_time(ended)` (the start reads as the end), and `"endedAt"` as `"ENDEDAT"` (no
    end time read back); `_history`'s `ended_at=entry.get("endedAt")` dropped or misnamed."""
    _new(store, "j", "o")
    claimed = store.claim("j", LEASE)
    started = iso_time(clock.now)
    clock.advance(7)

    store.retry(claimed, "transient", 5)

    job = store.get("j")
    assert job is not None
    assert job.history == (Attempt(1, started, iso_time(clock.now), AttemptOutcome.RETRY, "transient"),)


def test_a_retried_dead_job_is_listed_among_its_owners_pending_jobs(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `JobStore.reopen`'s (store/jobs.py) `self._table.items.state(job.job_id,
    job.owner, ...)` with the owner `None` (the job is keyed under no owner's pending list)."""
    _new(store, "j", "o")
    dead = store.fail(store.claim("j", LEASE), "boom")

    store.reopen(dead, None, 60)

    query = list_query(store, Caller(owner="o"), JobStatus.PENDING, None)
    assert store.list_ids(query, 10, {})[0] == ["j"]


# What the store's readers hand back: the delivery log's lines, an upload's stored metadata, a job.
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.


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

    assert every_attempt(log, "fan-a") == [older]
    assert every_attempt(log, "fan-b") == [newer]


def test_head_reports_the_size_and_content_type_the_client_uploaded(pipeline: Pipeline) -> None:
    """Broken line: `Uploads.head`'s (store/uploads.py) `content_type=response.get("ContentType")` as
    `content_type=None`."""
    uploads = Uploads(pipeline.env[config.ENV_UPLOADS_BUCKET])
    key = upload(uploads.bucket, "notes.txt", b"twelve bytes", "text/plain")

    stored = uploads.head(key)

    assert (stored.size, stored.content_type) == (12, "text/plain")


def test_head_of_an_upload_s3_will_not_show_says_which_key_and_why(pipeline: Pipeline) -> None:
    """S3 answers 403 to HeadObject when the role may not list the bucket (or a policy denies it); a job
    type's `context.uploads.head` then raises UploadAccessDeniedError naming the key and S3's code. moto
    grants everything, so S3's answer is given by a `before-call` hook. Seen to fail against `head`'s
    `UploadAccessDeniedError(f"{key} cannot be read: {code}")` as `(None)` (sample 581628's
    `xǁUploadsǁhead__mutmut_14`)."""
    uploads = Uploads(pipeline.env[config.ENV_UPLOADS_BUCKET])
    key = upload(uploads.bucket, "notes.txt", b"twelve bytes", "text/plain")

    def refuse(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        error = {
            "Error": {"Code": "403", "Message": "Forbidden"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }
        return AWSResponse("https://s3.local", 403, {}, None), error

    events = clients.client("s3").meta.events
    events.register("before-call.s3.HeadObject", refuse)
    try:
        with pytest.raises(UploadAccessDeniedError) as denied:
            uploads.head(key)
    finally:
        events.unregister("before-call.s3.HeadObject", refuse)
    assert str(denied.value) == f"{key} cannot be read: 403"


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


def test_a_cancelled_job_leaves_the_sweepers_index_and_expires(pipeline: Pipeline) -> None:
    """A finished state drops `dueAt`, so the sparse `byStatus` index forgets the job, and takes a TTL
    (store/schema.py, `JobItems.state`). Seen to fail against `JobStore.cancel`'s `remove=state.remove`
    dropped (sample 581628's `xǁJobStoreǁcancel__mutmut_19`: the cancelled job kept `dueAt`)."""
    jobs = store_from_env(pipeline.env)
    jobs.put_new(NewJob(job_id="j", job_type="echo", payload={}, max_attempts=1, owner="o"))
    assert schema.DUE_AT in raw_item(pipeline, "j")

    jobs.cancel(_read(jobs, "j"), None)

    item = raw_item(pipeline, "j")
    assert item["status"] == {"S": "cancelled"}
    assert schema.DUE_AT not in item
    assert schema.TTL_ATTRIBUTE in item


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
