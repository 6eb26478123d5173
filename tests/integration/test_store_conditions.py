"""Every conditional write of `lambdas/store/`, refused when each clause of its condition is false.

The lifecycle's guarantees are these conditions (docs/internals/state-machine.md): a claim takes only a pending job or
an expired lease, an attempt's write only lands while that attempt owns the job, a caller's action
only applies to the state it saw, and no write on a job id creates an item where there was none. Each
test makes one clause false, with the others true where the clause allows it, and checks that the
write is refused and the item unchanged (or absent); the last case of each checks the write that
should land does. Each clause named in a comment was dropped once and its test seen to fail; the few
no state can make false alone are listed in tests/README.md (mutation testing).
"""

import dataclasses

import boto3
import pytest

from lambdas.models.job import AlertClaim, Job, JobStatus, NewJob
from lambdas.store import codec
from lambdas.store.errors import JobMovedError, NotClaimableError, StaleAttemptError
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

LEASE = 60


def _new(store: JobStore, job_id: str = "j", **extra: object) -> Job:
    return store.put_new(
        NewJob(job_id=job_id, job_type="echo", payload={}, max_attempts=3, owner="o", **extra)
    )


def _now(store: JobStore, job_id: str = "j") -> Job:
    job = store.get(job_id)
    assert job is not None
    return job


def test_a_claim_takes_a_pending_job_or_an_expired_lease_and_nothing_else(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    # no job, no claim, and no item made by trying (the status clause alone refuses a missing item,
    # so `attribute_exists` here is a second guard no state can isolate)
    with pytest.raises(NotClaimableError):
        store.claim("missing", LEASE)
    assert store.get("missing") is None
    # `#status = :processing AND dueAt < :now`: a live lease is not taken over
    _new(store)
    first = store.claim("j", LEASE)
    with pytest.raises(NotClaimableError):
        store.claim("j", LEASE)
    # a finished job is never claimed, even once its old lease time has passed
    store.complete(first, {})
    clock.advance(LEASE + 1)
    with pytest.raises(NotClaimableError):
        store.claim("j", LEASE)
    assert _now(store).status is JobStatus.DONE
    # an expired lease is taken over, by the next attempt
    _new(store, "k")
    store.claim("k", LEASE)
    clock.advance(LEASE + 1)
    assert store.claim("k", LEASE).attempts == 2


def test_an_attempts_write_lands_only_while_that_attempt_owns_the_job(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    _new(store)
    first = store.claim("j", LEASE)
    # `#status = :processing`: recovery put the expired job back to pending
    clock.advance(LEASE + 1)
    assert store.requeue(_now(store), 30, "lease expired")
    with pytest.raises(StaleAttemptError):
        store.complete(first, {"late": True})
    # `attempts = :attempt`: a newer attempt holds it
    second = store.claim("j", LEASE)
    for write in (
        lambda: store.complete(first, {"late": True}),
        lambda: store.retry(first, "late", 5),
        lambda: store.save_progress("j", first.attempts, {"late": True}),
    ):
        with pytest.raises(StaleAttemptError):
            write()
    assert _now(store).result is None
    assert store.complete(second, {"ok": True}).status is JobStatus.DONE


def test_writes_on_a_waiting_parent_need_it_waiting_and_never_make_an_item(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    _new(store, "p")
    parent = store.claim("p", LEASE)
    # `#status = :waiting`: a parent still running is neither finished nor postponed
    assert store.finish_parent(parent) is None
    store.postpone_check("p", 600)
    assert _now(store, "p").status is JobStatus.PROCESSING
    assert _now(store, "p").due_at == parent.due_at
    # nor is a parent that does not exist written into being
    store.postpone_check("gone", 600)
    assert store.get("gone") is None
    waiting = store.await_children(parent, 2, {}, 60)
    store.postpone_check("p", 600)
    assert _now(store, "p").due_at > waiting.due_at
    finished = store.finish_parent(waiting)
    assert finished is not None
    assert finished.status is JobStatus.DONE


def test_a_requeue_needs_the_status_due_time_and_attempts_the_sweep_saw(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    _new(store)
    seen = _now(store)
    # `dueAt = :due`: another sweep requeued it first (moved the due time)
    assert store.requeue(seen, 30)
    assert not store.requeue(seen, 30)
    # `#status = :seen` alone: the attempt the sweep saw running was retried, due when its lease ended
    running = store.claim("j", LEASE)
    store.retry(running, "transient", LEASE)
    assert (_now(store).due_at, _now(store).attempts) == (running.due_at, running.attempts)
    assert not store.requeue(running, 30)
    # `attempts = :attempts` alone: pending and due as seen, but another attempt ran in between
    seen = _now(store)
    store.retry(store.claim("j", LEASE), "transient", LEASE)
    assert (_now(store).status, _now(store).due_at) == (seen.status, seen.due_at)
    assert not store.requeue(seen, 30)
    assert _now(store).attempts == 2
    clock.advance(LEASE + 1)
    assert store.requeue(_now(store), 30)
    assert _now(store).due_at > seen.due_at


def test_the_alert_claim_is_taken_once_per_dead_job_and_never_for_a_missing_one(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    _new(store)
    store.fail(store.claim("j", LEASE), "boom")
    dead = _now(store)
    # a job that is not there: there is nothing to alert for, and no item is made
    assert store.claim_alert(dataclasses.replace(dead, job_id="missing"), LEASE) is AlertClaim.SENT
    assert store.get("missing") is None
    store.mark_alerted("missing")
    assert store.get("missing") is None
    # the claim's clause: a live claim is held by its consumer, an expired one is taken over
    assert store.claim_alert(dead, LEASE) is AlertClaim.CLAIMED
    assert store.claim_alert(dead, LEASE) is AlertClaim.HELD
    clock.advance(LEASE + 1)
    assert store.claim_alert(dead, LEASE) is AlertClaim.CLAIMED
    # a released claim is free at once
    store.release_alert("j")
    assert store.claim_alert(dead, LEASE) is AlertClaim.CLAIMED
    # `attribute_not_exists(alertedAt)`: once sent, never again, even after the claim expires
    store.mark_alerted("j")
    clock.advance(LEASE + 1)
    assert store.claim_alert(dead, LEASE) is AlertClaim.SENT


def test_the_alert_claim_is_refused_for_a_job_that_moved_on(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """`#status = :seen AND attemptTotal = :total`: a dead job read, then retried (and run again),
    is no longer the job the alert was about. Seen to fail with the condition's `#status = :seen`
    clause dropped (the retried job's alert was claimed)."""
    _new(store)
    store.fail(store.claim("j", LEASE), "boom")
    dead = _now(store)
    store.reopen(dead, None, LEASE)
    assert store.claim_alert(dead, LEASE) is AlertClaim.MOVED
    store.fail(store.claim("j", LEASE), "boom again")
    assert store.claim_alert(dead, LEASE) is AlertClaim.MOVED
    assert store.claim_alert(_now(store), LEASE) is AlertClaim.CLAIMED


def test_a_callers_retry_and_cancel_apply_only_to_the_state_they_saw(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    _new(store)
    store.fail(store.claim("j", LEASE), "boom")
    seen_dead = _now(store)
    # `#status = :dead`: someone else's retry came first
    store.reopen(seen_dead, None, 60)
    with pytest.raises(JobMovedError):
        store.reopen(seen_dead, None, 60)
    # `attemptTotal = :total`: it is dead again, but after another attempt than the one seen
    store.fail(store.claim("j", LEASE), "boom again")
    assert _now(store).status is JobStatus.DEAD
    with pytest.raises(JobMovedError):
        store.reopen(seen_dead, None, 60)
    assert store.reopen(_now(store), None, 60).status is JobStatus.PENDING
    # cancel's `#status = :seen`: it was claimed since
    seen_pending = _now(store)
    store.claim("j", LEASE)
    with pytest.raises(JobMovedError):
        store.cancel(seen_pending, None)
    assert _now(store).status is JobStatus.PROCESSING
    _new(store, "k")
    assert store.cancel(_now(store, "k"), None).status is JobStatus.CANCELLED


def test_a_childs_retry_needs_its_parent_as_it_was_seen(pipeline: Pipeline, store: JobStore) -> None:
    _new(store, "p")
    store.await_children(store.claim("p", LEASE), 1, {}, 60)
    _new(store, "c", parent_id="p")
    seen_parent = _now(store, "p")
    store.fail(store.claim("c", LEASE), "boom")  # the last child: its write finishes the parent
    assert _now(store, "p").status is JobStatus.DONE
    # the parent's `#status = :seen`: it finished after it was read; neither write happens
    with pytest.raises(JobMovedError):
        store.reopen(_now(store, "c"), seen_parent, 60)
    assert _now(store, "c").status is JobStatus.DEAD
    children = _now(store, "p").children
    assert children is not None
    assert children.dead == 1
    reopened = store.reopen(_now(store, "c"), _now(store, "p"), 60)
    assert reopened.status is JobStatus.PENDING
    assert _now(store, "p").status is JobStatus.WAITING


def test_a_childs_cancel_never_writes_a_parent_that_is_gone(pipeline: Pipeline, store: JobStore) -> None:
    _new(store, "p")
    store.await_children(store.claim("p", LEASE), 1, {}, 60)
    _new(store, "c", parent_id="p")
    seen_parent = _now(store, "p")
    boto3.client("dynamodb").delete_item(TableName=pipeline.table, Key=codec.key("p"))
    # the parent's `attribute_exists`: its counter is not added to a new, empty item
    with pytest.raises(JobMovedError):
        store.cancel(_now(store, "c"), seen_parent)
    assert store.get("p") is None
    assert _now(store, "c").status is JobStatus.PENDING
