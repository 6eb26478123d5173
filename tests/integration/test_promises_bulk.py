"""A resumed bulk action, after a crash or out of time, continues after the last page it did even when
that page's jobs are still in the listed state (skipped ones), so none is counted or acted on twice;
a job that moved before the action reached it counts as skipped; a run stops for time only with less
than RESERVE_MS left; the bulk job records the operator key that started it as its owner.

Found by `make mutate` (mutants of `bulk.run_bulk` and `bulk._apply` no test failed on: the existing
resume test only has jobs that leave the listed state, so starting over lists the same remainder).
Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from typing import Any

import pytest

from lambdas.jobs.base import ContinueLater
from lambdas.lifecycle import actions, bulk
from lambdas.models.api import BulkRequest
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.integration.test_bulk import OPERATOR, _dead_jobs
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

DEAD = bulk.PAGE_SIZE + 20
# The first delivery skips every job of page one (they stay dead, so they stay listed); the next applies.
EXACT = {"action": "retry", "matched": DEAD, "applied": 20, "skipped": bulk.PAGE_SIZE, "finished": True}


def _bulk_retry(pipeline: Pipeline, store: JobStore, clock: Clock) -> tuple[JobQueue, Job, Job]:
    """A bulk retry over DEAD dead jobs, claimed for its first delivery: (queue, job, first attempt)."""
    queue = JobQueue(pipeline.queue_url)
    _dead_jobs(store, DEAD)
    clock.advance(1)
    job = bulk.start_bulk(store, queue, OPERATOR, "retry", BulkRequest())
    return queue, job, store.claim(job.job_id, 60)


def _next_delivery(store: JobStore, queue: JobQueue, job: Job) -> Any:
    second = store.claim(job.job_id, 60)
    return bulk.run_bulk(store, queue, job.job_id, second.attempts, lambda: 60_000, job.payload)


def test_a_resumed_bulk_retry_does_not_list_its_skipped_first_page_again(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `run_bulk`'s saved progress `{**progress, "cursor": ...}` as `"CURSOR"`."""
    queue, job, first = _bulk_retry(pipeline, store, clock)
    skipped: list[str] = []
    real_apply = bulk._apply

    def skip_page_one_then_crash(*args: Any) -> bool:
        if len(skipped) == bulk.PAGE_SIZE:
            raise RuntimeError("the worker dies")
        skipped.append(args[3])
        return False

    monkeypatch.setattr(bulk, "_apply", skip_page_one_then_crash)
    with pytest.raises(RuntimeError):
        bulk.run_bulk(store, queue, job.job_id, first.attempts, lambda: 60_000, job.payload)
    monkeypatch.setattr(bulk, "_apply", real_apply)
    clock.advance(61)  # the lease runs out; a new attempt takes over

    assert _next_delivery(store, queue, job) == EXACT
    assert all(j.status is JobStatus.DEAD for j in store.get_many(skipped))


def test_a_bulk_action_out_of_time_hands_its_cursor_to_the_next_delivery(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug the mutant above led to: `run_bulk` returned `ContinueLater(progress)` without the cursor,
    and `continue_later` stores that as the job's result, so the next delivery listed from the start and
    counted the skipped first page again (matched 220 of 120). Broken line: the cursor left out again."""
    queue, job, first = _bulk_retry(pipeline, store, clock)
    real_apply = bulk._apply
    monkeypatch.setattr(bulk, "_apply", lambda *args: False)
    later = bulk.run_bulk(store, queue, job.job_id, first.attempts, lambda: 0, job.payload)
    assert isinstance(later, ContinueLater)
    store.continue_later(first, later.result)
    monkeypatch.setattr(bulk, "_apply", real_apply)

    assert _next_delivery(store, queue, job) == EXACT


def test_a_job_that_moved_before_the_bulk_action_reached_it_counts_as_skipped(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `_apply`'s `return False` for a job that could not be acted on as `return True`."""
    queue = JobQueue(pipeline.queue_url)
    dead = _dead_jobs(store, 3)
    clock.advance(1)
    job = bulk.start_bulk(store, queue, OPERATOR, "retry", BulkRequest())
    claimed = store.claim(job.job_id, 60)
    # a caller retries one of them between the bulk job's listing and its own retry of it
    real_retry = actions.retry_job

    def caller_first(store_: JobStore, queue_: JobQueue, caller: Caller, job_id: str) -> Job:
        if job_id == dead[1]:
            real_retry(store_, queue_, caller, job_id)
        return real_retry(store_, queue_, caller, job_id)

    monkeypatch.setattr(actions, "retry_job", caller_first)

    result = bulk.run_bulk(store, queue, job.job_id, claimed.attempts, lambda: 60_000, job.payload)

    assert result == {"action": "retry", "matched": 3, "applied": 2, "skipped": 1, "finished": True}


def test_a_job_that_enters_the_status_after_the_bulk_action_started_is_not_matched(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Broken line: `list_query`'s status-time query without `before=before` (the bulk job's start)."""
    queue = JobQueue(pipeline.queue_url)
    early = _dead_jobs(store, 2)
    clock.advance(1)
    job = bulk.start_bulk(store, queue, OPERATOR, "retry", BulkRequest())
    clock.advance(1)
    store.put_new(NewJob(job_id="late", job_type="test_echo", payload={}, max_attempts=1, owner="a"))
    store.fail(store.claim("late", 60), "died after the bulk action started")
    claimed = store.claim(job.job_id, 60)

    result = bulk.run_bulk(store, queue, job.job_id, claimed.attempts, lambda: 60_000, job.payload)

    assert result == {"action": "retry", "matched": 2, "applied": 2, "skipped": 0, "finished": True}
    assert [j.status for j in store.get_many([*early, "late"])] == [JobStatus.PENDING] * 2 + [JobStatus.DEAD]


@pytest.mark.parametrize(("left", "stops"), [(bulk.RESERVE_MS, False), (bulk.RESERVE_MS - 1, True)])
def test_a_bulk_action_hands_on_only_with_less_than_its_reserve_left(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch, left: int, stops: bool
) -> None:
    """Broken line: `run_bulk`'s `remaining_ms() < RESERVE_MS` as `<=` (it hands on with exactly the
    reserve left, a delivery it did not need)."""
    monkeypatch.setattr(bulk, "PAGE_SIZE", 2)
    queue = JobQueue(pipeline.queue_url)
    _dead_jobs(store, 3)
    clock.advance(1)
    job = bulk.start_bulk(store, queue, OPERATOR, "retry", BulkRequest())
    claimed = store.claim(job.job_id, 60)

    result = bulk.run_bulk(store, queue, job.job_id, claimed.attempts, lambda: left, job.payload)

    assert isinstance(result, ContinueLater) is stops
    counts = result.result if isinstance(result, ContinueLater) else result
    assert (counts["matched"], counts["applied"]) == ((2, 2) if stops else (3, 3))


def test_a_bulk_job_records_the_operator_key_that_started_it(pipeline: Pipeline, store: JobStore) -> None:
    """Every job records its owner, the key that submitted it (docs/design.md). Broken line:
    `start_bulk`'s `owner=caller.owner` as `owner=None`."""
    job = bulk.start_bulk(store, JobQueue(pipeline.queue_url), OPERATOR, "cancel", BulkRequest())

    stored = store.get(job.job_id)
    assert stored is not None
    assert stored.owner == OPERATOR.owner
