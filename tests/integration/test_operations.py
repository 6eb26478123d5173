"""The caller's operations (lambdas/lifecycle/requests/operations.py, retry_cancel.py): scoping, lists and paging,
retry and cancel with their races, history across a manual retry."""

import threading
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from lambdas import config
from lambdas.jobs.types.webhook_delivery import DELIVERY_TYPE, delivery_id
from lambdas.lifecycle.errors import (
    InvalidCursorError,
    JobNotFoundError,
    NotCancellableError,
    NotRetryableError,
)
from lambdas.lifecycle.requests import operations, retry_cancel
from lambdas.lifecycle.requests.uploads import download_links
from lambdas.models.api import JobView
from lambdas.models.caller import Caller
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import Job, JobAction, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store import codec
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.errors import NotClaimableError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.uploads import result_key
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env

ALICE, BOB = Caller("key-alice"), Caller("key-bob")
OPERATOR = Caller("key-operator", operator=True)


def _job(store: JobStore, job_id: str, owner: str = ALICE.owner, **extra: Any) -> Job:
    return store.put_new(
        NewJob(job_id=job_id, job_type="echo", payload={}, max_attempts=2, owner=owner, **extra)
    )


def _dead(store: JobStore, job_id: str, owner: str = ALICE.owner) -> Job:
    _job(store, job_id, owner)
    return store.fail(store.claim(job_id, 60), "boom")


def _all_pages(fetch: Callable[[str | None], Any], items: str) -> list[Any]:
    seen, cursor = [], None
    while True:
        page = fetch(cursor)
        seen.extend(getattr(page, items))
        cursor = page.next_cursor
        if cursor is None:
            return seen


def test_another_owners_job_is_not_found_for_every_operation(pipeline: Pipeline, store: JobStore) -> None:
    queue = JobQueue(pipeline.queue_url)
    _dead(store, "alices")

    for call in (
        lambda: operations.find_job(store, "alices", BOB),
        lambda: operations.list_children(store, BOB, "alices", status=None, limit=10, cursor=None),
        lambda: retry_cancel.retry_job(store, queue, BOB, "alices"),
        lambda: retry_cancel.cancel_job(store, BOB, "alices"),
    ):
        with pytest.raises(JobNotFoundError):
            call()
    assert operations.list_jobs(store, BOB, status=None, job_type=None, limit=10, cursor=None).jobs == []
    assert operations.find_job(store, "alices", ALICE).owner == ALICE.owner
    listed = operations.list_jobs(
        store, OPERATOR, status=JobStatus.DEAD, job_type=None, limit=10, cursor=None
    )
    assert [j.job_id for j in listed.jobs] == ["alices"]
    assert retry_cancel.retry_job(store, queue, OPERATOR, "alices").status is JobStatus.PENDING


def test_paging_over_260_jobs_across_shards_has_no_duplicate_and_no_gap(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Broken line: `JobListing.list_ids`'s `following[number] = shard.start` as `= END` (a shard's
    position lost between pages) leaves gaps."""
    ids = []
    for n in range(260):
        clock.advance(0.001 * (n % 3))  # some share a timestamp
        ids.append(_job(store, f"job-{n:03}").job_id)
    _job(store, "bobs", owner=BOB.owner)

    for caller, status, expected in (
        (ALICE, None, set(ids)),
        (ALICE, JobStatus.PENDING, set(ids)),
        (OPERATOR, JobStatus.PENDING, {*ids, "bobs"}),
        (OPERATOR, None, {*ids, "bobs"}),
    ):
        listed = _all_pages(
            lambda cursor, c=caller, s=status: operations.list_jobs(
                store, c, status=s, job_type=None, limit=25, cursor=cursor
            ),
            "jobs",
        )
        found = [j.job_id for j in listed]
        assert len(found) == len(set(found)), "a job was listed twice"
        assert set(found) == expected
        order = [j.status_at if status else j.created_at for j in listed]
        assert order == sorted(order, reverse=True), "not newest first"


def test_a_bad_or_foreign_cursor_is_refused(pipeline: Pipeline, store: JobStore) -> None:
    for n in range(3):
        _job(store, f"j{n}")
    page = operations.list_jobs(store, ALICE, status=None, job_type=None, limit=1, cursor=None)
    assert page.next_cursor
    for cursor in ("not-base64!", "e30", page.next_cursor[:-2] + "xx"):
        with pytest.raises(InvalidCursorError):
            operations.list_jobs(store, ALICE, status=None, job_type=None, limit=1, cursor=cursor)
    with pytest.raises(InvalidCursorError):  # made for another list
        operations.list_jobs(
            store, ALICE, status=JobStatus.PENDING, job_type=None, limit=1, cursor=page.next_cursor
        )


def test_type_filter_and_a_clients_processing_list(pipeline: Pipeline, store: JobStore) -> None:
    _job(store, "a1")
    store.put_new(NewJob(job_id="a2", job_type="other", payload={}, max_attempts=1, owner=ALICE.owner))
    _job(store, "b1", owner=BOB.owner)
    for job_id in ("a1", "b1"):
        store.claim(job_id, 60)

    typed = operations.list_jobs(store, ALICE, status=None, job_type="other", limit=10, cursor=None)
    running = operations.list_jobs(
        store, ALICE, status=JobStatus.PROCESSING, job_type=None, limit=10, cursor=None
    )

    assert [j.job_id for j in typed.jobs] == ["a2"]
    assert [j.job_id for j in running.jobs] == ["a1"]


def test_retry_keeps_history_and_gives_a_fresh_budget(pipeline: Pipeline, store: JobStore) -> None:
    queue = JobQueue(pipeline.queue_url)
    _job(store, "j")
    store.retry(store.claim("j", 60), "first", 0)
    store.fail(store.claim("j", 60), "second")

    retried = retry_cancel.retry_job(store, queue, ALICE, "j")
    again = store.claim("j", 60)

    assert (retried.status, retried.attempts) == (JobStatus.PENDING, 0)
    assert (again.attempts, again.attempt_total) == (1, 3)
    view = JobView.of(again, retry_cancel.allowed_actions(again)).model_dump(by_alias=True)
    assert [(h["attempt"], h["outcome"]) for h in view["history"]] == [(1, "retry"), (2, "dead"), (3, None)]
    assert view["history"][1]["error"] == "second"


def test_retry_vs_retry_one_wins(pipeline: Pipeline, store: JobStore) -> None:
    queue = JobQueue(pipeline.queue_url)
    _dead(store, "j")
    outcomes = _race(
        lambda: retry_cancel.retry_job(store, queue, ALICE, "j"),
        lambda: retry_cancel.retry_job(store, queue, ALICE, "j"),
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["Job", "NotRetryableError"]
    with pytest.raises(NotRetryableError, match="pending"):
        retry_cancel.retry_job(store, queue, ALICE, "j")


def test_cancel_vs_claim_a_cancelled_job_never_runs(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: the claim condition `#status = :pending OR` as `#status <> :processing OR`."""
    for n in range(6):
        _job(store, f"j{n}")
        outcomes = _race(
            lambda n=n: retry_cancel.cancel_job(store, ALICE, f"j{n}"), lambda n=n: store.claim(f"j{n}", 60)
        )
        kinds = sorted(type(o).__name__ for o in outcomes)
        final = store.get(f"j{n}")
        assert final is not None
        if final.status is JobStatus.CANCELLED:
            assert kinds == ["Job", "NotClaimableError"]
        else:
            assert final.status is JobStatus.PROCESSING
            assert kinds == ["Job", "NotCancellableError"]


def test_a_message_for_a_cancelled_job_is_dropped_and_acknowledged(
    pipeline: Pipeline, store: JobStore, test_types: None
) -> None:
    job_id = pipeline.submit("test_echo", {"value": "x"})
    retry_cancel.cancel_job(store, OPERATOR, job_id)

    response = pipeline.run_worker()

    assert response["batchItemFailures"] == []
    assert pipeline.visible(pipeline.queue_url) == 0
    final = store.get(job_id)
    assert final is not None
    assert (final.status, final.attempts) == (JobStatus.CANCELLED, 0)
    with pytest.raises(NotClaimableError):
        store.claim(job_id, 60)


def _fan_out(store: JobStore, endpoints: int) -> tuple[Job, list[str]]:
    payload = {
        "eventType": "e",
        "data": {},
        "endpoints": [{"id": f"ep{n}", "url": f"https://x/{n}"} for n in range(endpoints)],
    }
    store.put_new(
        NewJob(job_id="fan", job_type="webhook_fanout", payload=payload, max_attempts=2, owner=ALICE.owner)
    )
    parent = store.claim("fan", 60)
    children = [delivery_id("fan", f"ep{n}") for n in range(endpoints)]
    store.create_children(
        [
            NewJob(
                job_id=c,
                job_type=DELIVERY_TYPE,
                payload={},
                max_attempts=2,
                parent_id="fan",
                owner=ALICE.owner,
            )
            for c in children
        ]
    )
    store.await_children(parent, endpoints, {}, 60)
    waiting = store.get("fan")
    assert waiting is not None
    return waiting, children


def test_retry_of_a_fan_out_retries_its_dead_children_and_it_waits_again(
    pipeline: Pipeline, store: JobStore
) -> None:
    queue = JobQueue(pipeline.queue_url)
    _, children = _fan_out(store, 3)
    store.complete(store.claim(children[0], 60), {})
    for child in children[1:]:
        store.fail(store.claim(child, 60), "gone")
    done = store.get("fan")  # the last child's write finished it
    assert done is not None
    assert done.status is JobStatus.DONE

    retried = retry_cancel.retry_job(store, queue, ALICE, "fan")

    assert retried.status is JobStatus.WAITING
    assert retried.children is not None
    assert (retried.children.done, retried.children.dead) == (1, 0)
    page = operations.list_children(store, ALICE, "fan", status=JobStatus.PENDING, limit=10, cursor=None)
    assert [c.job_id for c in page.children] == children[1:]


def test_retry_of_a_fan_out_with_a_pending_child_is_refused(pipeline: Pipeline, store: JobStore) -> None:
    queue = JobQueue(pipeline.queue_url)
    _, children = _fan_out(store, 2)
    store.fail(store.claim(children[0], 60), "gone")

    with pytest.raises(NotRetryableError, match="waiting"):
        retry_cancel.retry_job(store, queue, ALICE, "fan")


def test_cancel_of_a_waiting_fan_out_cancels_its_pending_children(
    pipeline: Pipeline, store: JobStore
) -> None:
    _, children = _fan_out(store, 3)
    store.complete(store.claim(children[0], 60), {})

    cancelled = retry_cancel.cancel_job(store, ALICE, "fan")

    assert cancelled.status is JobStatus.CANCELLED
    assert cancelled.children is not None
    assert (cancelled.children.done, cancelled.children.cancelled) == (1, 2)
    assert (
        JobView.of(cancelled, retry_cancel.allowed_actions(cancelled)).model_dump(by_alias=True)["children"][
            "cancelled"
        ]
        == 2
    )
    with pytest.raises(NotCancellableError):
        retry_cancel.cancel_job(store, ALICE, "fan")


def test_cancel_of_a_waiting_fan_out_cancels_a_child_whose_retry_waits_scheduled(
    pipeline: Pipeline, store: JobStore
) -> None:
    """A delivery whose retry waits longer than SQS can delay a message is `scheduled`: it has not started
    again either, and a cancel that skipped it would deliver after the fan-out was cancelled. Broken line:
    `TAKES`' cancel without `JobStatus.SCHEDULED`."""
    _, children = _fan_out(store, 2)
    store.retry(store.claim(children[0], 60), "receiver down", 7200, scheduled=True)
    statuses = {job.job_id: job.status for job in store.get_many(children)}
    assert statuses == {children[0]: JobStatus.SCHEDULED, children[1]: JobStatus.PENDING}

    cancelled = retry_cancel.cancel_job(store, ALICE, "fan")

    assert cancelled.children is not None
    assert cancelled.children.cancelled == 2
    assert {job.status for job in store.get_many(children)} == {JobStatus.CANCELLED}


def _race(*calls: Callable[[], Any]) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as error:
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _delivery_attempt(child: str, endpoint: int, attempt: int) -> DeliveryAttempt:
    """Attempt 1 of `_fan_out`'s child on endpoint `ep<endpoint>` got a 500, any later one a 200."""
    return DeliveryAttempt(
        fanout_id="fan",
        delivery_id=child,
        endpoint_id=f"ep{endpoint}",
        event_type="e",
        attempt=attempt,
        attempted_at=f"2026-01-01T00:00:0{attempt}.000Z",
        outcome=DeliveryOutcome.RETRY if attempt == 1 else DeliveryOutcome.DELIVERED,
        latency_ms=5,
        http_status=500 if attempt == 1 else 200,
    )


def test_deliveries_of_a_fan_out_and_of_one_child_page_through_the_log(
    pipeline: Pipeline, store: JobStore
) -> None:
    log = DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE])
    _, children = _fan_out(store, 3)
    for n, child in enumerate(children):
        for attempt in (1, 2):
            log.record(_delivery_attempt(child, n, attempt))

    every = _all_pages(
        lambda cursor: operations.list_deliveries(store, log, ALICE, "fan", limit=4, cursor=cursor),
        "deliveries",
    )
    one = operations.list_deliveries(store, log, ALICE, children[1], limit=10, cursor=None)

    assert sorted((d.delivery_id, d.attempt) for d in every) == sorted(
        (c, a) for c in children for a in (1, 2)
    )
    assert [(d.endpoint_id, d.attempt, d.http_status) for d in one.deliveries] == [
        ("ep1", 1, 500),
        ("ep1", 2, 200),
    ]
    assert one.next_cursor is None
    with pytest.raises(JobNotFoundError):
        operations.list_deliveries(store, log, BOB, "fan", limit=4, cursor=None)


def test_the_dead_letter_path_leaves_a_cancelled_job_cancelled(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `mark_dead`'s `job.status in (JobStatus.DONE, JobStatus.CANCELLED)` without CANCELLED."""
    _job(store, "j")
    retry_cancel.cancel_job(store, ALICE, "j")

    assert store.mark_dead("j", "redriven") is None
    final = store.get("j")
    assert final is not None
    assert final.status is JobStatus.CANCELLED


# A caller's retry racing another change: the 409 names what moved, and a moved child does not stop
# the others. Found by `make mutate` (mutants of `lambdas/lifecycle/requests/retry_cancel.py` no test failed on).
#
# Each test was first run against the one-line break its docstring names, seen to fail, then restored.


def _meanwhile(
    store: JobStore, monkeypatch: pytest.MonkeyPatch, call: int, change: Callable[[Job], None]
) -> None:
    """The `call`-th `store.reopen` first lets `change(job)` happen: another caller's write in between."""
    real = store.reopen
    calls = []

    def reopen(job: Job, parent: Job | None, recheck_seconds: int) -> Job:
        calls.append(job.job_id)
        if len(calls) == call:
            change(job)
        return real(job, parent, recheck_seconds)

    monkeypatch.setattr(store, "reopen", reopen)


def _finished_fan_out(store: JobStore, children_count: int) -> list[str]:
    _, children = _fan_out(store, children_count)
    for child in children:
        store.fail(store.claim(child, 60), "gone")
    assert _read_back(store, "fan").status is JobStatus.DONE  # the last child's write finished it
    return children


def test_a_fan_out_whose_parent_moved_before_its_retry_retries_on_the_parent_as_it_is_now(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18, item 3. Broken line: `fan_out.retry_child`'s `except ParentMovedError:` re-reading the
    parent, made `return False, current` (the old stale snapshot: a 409, our child left dead)."""
    children = _finished_fan_out(store, 2)
    # another caller retries the other child first: the parent is `waiting` again when ours writes
    other = children[1]
    _meanwhile(
        store,
        monkeypatch,
        1,
        lambda job: JobStore.reopen(store, _read_back(store, other), store.get("fan"), 60),
    )

    _assert_all_retried(
        store, retry_cancel.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "fan"), children
    )


def test_a_child_that_moved_meanwhile_is_left_and_the_others_are_retried(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `fan_out.act_on_page`'s `continue` after a moved child as `break`."""
    children = _finished_fan_out(store, 3)
    # the second child is retried by another caller just before ours reaches it
    _meanwhile(store, monkeypatch, 2, lambda job: JobStore.reopen(store, job, store.get("fan"), 60))

    _assert_all_retried(
        store, retry_cancel.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "fan"), children
    )


def _assert_all_retried(store: JobStore, retried: Job | retry_cancel.Deferred, children: list[str]) -> None:
    assert isinstance(retried, Job)
    assert retried.status is JobStatus.WAITING
    assert [_read_back(store, child).status for child in children] == [JobStatus.PENDING] * len(children)
    assert retried.children is not None
    assert retried.children.dead == 0


def test_a_job_deleted_before_its_retry_is_a_409_that_says_it_is_gone(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `_moved`'s `now.status.value if now else "gone"` as `if now or True` (a 500)."""
    _dead(store, "j")

    def delete(job: Job) -> None:
        boto3.client("dynamodb").delete_item(TableName=pipeline.table, Key=codec.key(job.job_id))

    _meanwhile(store, monkeypatch, 1, delete)

    with pytest.raises(NotRetryableError, match="job j changed while it was being retried; it is gone now"):
        retry_cancel.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "j")


def _read_back(store: JobStore, job_id: str) -> Job:
    job = store.get(job_id)
    assert job is not None
    return job


# What a caller reads: a fan-out's children page says why each failed child failed and pages through
# every child, a delivery log's cursor serves only the log it came from, a finished job's download links
# say when they expire (and a result that is not an object has none), lists filtered by type (and owner)
# find every match.
#
# Found by `make mutate` (mutants of `reads`, `uploads.download_links` and `JobListing._query` no test
# failed on). Each test was first run against the one-line break its docstring names, seen to fail,
# then restored.


def test_a_failed_child_is_listed_with_its_last_error(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_children`'s `last_error=child.last_error` as `last_error=None`."""
    _, children = _fan_out(store, 2)
    store.fail(store.claim(children[0], 60), "connection refused")

    page = operations.list_children(store, ALICE, "fan", status=None, limit=10, cursor=None)

    assert [(c.job_id, c.status, c.last_error) for c in page.children] == [
        (children[0], "dead", "connection refused"),
        (children[1], "pending", None),
    ]


def test_a_fan_outs_children_page_through_to_the_last_one(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_children`'s `next_cursor = paging.encode(tag, at) if ...` as `next_cursor = None`
    (a fan-out of more children than one page lists only its first page)."""
    _, children = _fan_out(store, 5)

    listed = _all_pages(
        lambda cursor: operations.list_children(store, ALICE, "fan", status=None, limit=2, cursor=cursor),
        "children",
    )

    assert [c.job_id for c in listed] == children


def test_a_delivery_log_cursor_is_refused_by_another_jobs_log(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_deliveries`'s `tag = paging.query_tag("deliveries", job_id)` as `tag = None`
    (every delivery log's cursor then fits every other's)."""
    log = DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE])
    _, children = _fan_out(store, 2)
    for n, child in enumerate(children):
        log.record(_delivery_attempt(child, n, 1))
    cursor = operations.list_deliveries(store, log, ALICE, "fan", limit=1, cursor=None).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidCursorError):
        operations.list_deliveries(store, log, ALICE, children[1], limit=1, cursor=cursor)


@pytest.mark.parametrize("result", [None, ["results/j/thumb.png"], "results/j/thumb.png"], ids=str)
def test_a_done_job_whose_result_is_not_an_object_has_no_download_links(
    pipeline: Pipeline, store: JobStore, result: object
) -> None:
    """A job type may return any JSON value; GET /jobs/{id} must still answer. Broken line:
    `download_links`'s `status is not DONE or not isinstance(result, dict)` with `and` (an
    AttributeError, a 500, on `result.get`)."""
    _job(store, "j")
    store.complete(store.claim("j", 60), result)
    job = store.get("j")
    assert job is not None

    assert download_links(job) == []


def test_a_finished_jobs_download_links_expire_when_their_signature_does(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `download_links`'s `now + expires_in` as `now - expires_in` (links already expired)."""
    _job(store, "j")
    store.complete(store.claim("j", 60), {"keys": [result_key("j", "thumb.png"), "uploads/elsewhere.png"]})
    job = store.get("j")
    assert job is not None

    (link,) = download_links(job, now=1_796_000_000)

    assert link.key == result_key("j", "thumb.png")
    assert link.expires_at == iso_time(1_796_000_000 + config.DOWNLOAD_URL_EXPIRES_SECONDS)
    assert f"X-Amz-Expires={config.DOWNLOAD_URL_EXPIRES_SECONDS}" in link.url


def test_a_callers_running_jobs_of_one_type_are_listed_through_both_filters(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `_query`'s `" AND ".join(filters)` as `"XX AND XX".join(...)` (a 500 with two filters)."""
    for job_id, job_type, owner in (
        ("a1", "echo", ALICE.owner),
        ("a2", "other", ALICE.owner),
        ("b1", "other", "b"),
    ):
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=owner))
        store.claim(job_id, 60)

    page = operations.list_jobs(
        store, ALICE, status=JobStatus.PROCESSING, job_type="other", limit=10, cursor=None
    )

    assert [j.job_id for j in page.jobs] == ["a2"]


def test_a_query_page_the_filter_empties_moves_the_shard_on(pipeline: Pipeline, clock: Clock) -> None:
    """Broken line: `_query`'s `codec.position(response["LastEvaluatedKey"], index)` without `index`."""
    # one shard, so a one-job page reads the shard four items at a time (the smallest batch)
    store = store_from_env(pipeline.env, shards=1)
    for job_id, job_type in [("old", "other")] + [(f"new{n}", "echo") for n in range(6)]:
        clock.advance(1)
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=ALICE.owner))
        store.claim(job_id, 60)

    page = operations.list_jobs(
        store, OPERATOR, status=JobStatus.PROCESSING, job_type="other", limit=1, cursor=None
    )

    assert [j.job_id for j in page.jobs] == ["old"]


def test_the_operators_list_of_one_type_holds_every_owners_jobs_of_that_type_only(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `list_query`'s operator `ListQuery(schema.CREATED_INDEX, ..., job_type, ...)` with
    `None` for `job_type` (the operator's unfiltered list came back whole)."""
    for job_id, job_type, owner in (
        ("a1", "echo", ALICE.owner),
        ("a2", "other", ALICE.owner),
        ("b1", "other", "b"),
    ):
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=owner))

    page = operations.list_jobs(store, OPERATOR, status=None, job_type="other", limit=10, cursor=None)

    assert sorted(j.job_id for j in page.jobs) == ["a2", "b1"]


def test_each_state_allows_the_actions_that_retry_and_cancel_take(store: JobStore) -> None:
    """The rule the job's API view sends as `allowedActions` (the console's buttons) is the one the
    actions apply. Seen to fail with `allowed_actions` without `_retries_children(job) or` (a finished
    fan-out with dead children offered no retry, though `retry_job` retries them)."""
    pending = _job(store, "p")
    dead = _dead(store, "d")
    done = store.complete(store.claim(_job(store, "ok").job_id, 60), {})
    waiting, children = _fan_out(store, 2)
    assert retry_cancel.allowed_actions(pending) == [JobAction.CANCEL]
    assert retry_cancel.allowed_actions(dead) == [JobAction.RETRY]
    assert retry_cancel.allowed_actions(done) == []
    assert retry_cancel.allowed_actions(waiting) == [JobAction.CANCEL]
    store.complete(store.claim(children[0], 60), {})
    store.fail(store.claim(children[1], 60), "gone")
    finished = store.get("fan")
    assert finished is not None
    assert finished.status is JobStatus.DONE
    assert retry_cancel.allowed_actions(finished) == [JobAction.RETRY]
    assert JobView.of(finished, retry_cancel.allowed_actions(finished)).model_dump(by_alias=True)[
        "allowedActions"
    ] == ["retry"]
