"""Fan-out children that end in one worker batch end together: one transaction for their outcomes.

`BatchEndings` (lambdas/lifecycle/attempt/batch_endings.py) holds a child that ended until the batch's other
messages that may be its siblings have ended or turned out not to be; `ChildEndings.end_together`
(lambdas/store/children.py) then writes them, the counters moved once. The threads here are the
batch's; each waits on the others' moves, never on a timer, except where a wait's bound is the subject.
Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

from lambdas.lifecycle.attempt.batch_endings import BatchEndings, Place
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.store import children, clients, transactions
from lambdas.store.children import ChildEnding
from lambdas.store.errors import StaleAttemptError
from lambdas.store.expressions import Update, marshal
from lambdas.store.jobs import Ended, JobStore
from lambdas.store.transactions import Put
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

PARENT = "fan"
OWNER = "client-a"
JOIN_SECONDS = 60  # a thread still running after this is stuck (the test fails, it does not hang)
LONG = 30.0  # a wait no passing test reaches: under a break, its children write alone after it


def _waiting_parent(store: JobStore, total: int, parent: str = PARENT) -> list[Job]:
    """A parent that wrote `total` children and waits for them; its children, claimed."""
    store.put_new(NewJob(job_id=parent, job_type="test_echo", payload={}, max_attempts=2, owner=OWNER))
    claimed = store.claim(parent, 60)  # type: ignore[attr-defined]
    ids = [f"{parent}-child-{n}" for n in range(total)]
    store.create_children(
        [
            NewJob(job_id=i, job_type="test_echo", payload={}, max_attempts=2, parent_id=parent, owner=OWNER)
            for i in ids
        ]
    )
    store.await_children(claimed, total, {}, 60)
    return [store.claim(i, 60) for i in ids]  # type: ignore[attr-defined]


def _parent(store: JobStore, parent: str = PARENT) -> Job:
    job = store.get(parent)
    assert job is not None
    assert job.children is not None
    return job


@contextmanager
def _sent(operation: str) -> Iterator[list[dict[str, Any]]]:
    """Every `operation` request the store's clients send meanwhile."""
    sent: list[dict[str, Any]] = []

    def keep(params: dict[str, Any], **_: Any) -> None:
        sent.append(params)

    ddb = clients.client("dynamodb")
    ddb.meta.events.register(f"provide-client-params.dynamodb.{operation}", keep)
    try:
        yield sent
    finally:
        ddb.meta.events.unregister(f"provide-client-params.dynamodb.{operation}", keep)


def _batch(store: JobStore, messages: int, threads: int | None = None, wait: float = LONG) -> BatchEndings:
    return BatchEndings(store, messages, threads or messages, wait, wait, lambda: 900_000)


def _ending_in(pool: ThreadPoolExecutor, store: JobStore, job: Job, place: Place) -> "Future[Ended]":
    """The child's done, written through its place in the batch, on a thread of the batch's own."""
    place.claimed(job)

    def end() -> Ended:
        try:
            return store.succeed(job, {"ok": True}, (), place)
        finally:
            place.leave()

    return pool.submit(end)


def _until(condition: Callable[[], bool]) -> None:
    """Block until another thread made `condition` true (it reads state those threads move)."""
    pause = threading.Event()
    for _ in range(JOIN_SECONDS * 1000):
        if condition():
            return
        pause.wait(0.001)
    raise AssertionError("the batch's threads never got there")


def test_siblings_ending_in_one_batch_are_one_transaction_that_finishes_the_parent(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `ChildEndings._end_chunk`'s `completes = finished + len(endings) == before_last + 1`
    as `completes = False` (the last children count, and nobody finishes the parent)."""
    jobs = _waiting_parent(store, 3)
    batch = _batch(store, 3)
    with _sent("TransactWriteItems") as sent, ThreadPoolExecutor(3) as pool:
        ended = [_ending_in(pool, store, job, batch.place()) for job in jobs]
        results = [future.result(JOIN_SECONDS) for future in ended]

    assert len(sent) == 1
    assert len(sent[0]["TransactItems"]) == 5  # three children, the counters, the parent
    assert [r.parent_finished is not None for r in results].count(True) == 1
    parent = _parent(store)
    assert parent.status is JobStatus.DONE
    assert (parent.children.done, parent.children.pending) == (3, 0)


def test_a_child_waits_for_an_unclaimed_message_but_not_for_another_parents_child(
    pipeline: Pipeline, store: JobStore
) -> None:
    """The first child of `fan` ends while the batch's second message is not yet claimed: it waits; that
    message turns out to be its sibling, and both are written together while a child of another parent
    still runs. Broken line: `BatchEndings._ready`'s `self._running[group] == 0` as
    `sum(self._running.values()) == 0` (they wait for the other parent's child)."""
    first, second = _waiting_parent(store, 2)
    (other,) = _waiting_parent(store, 1, parent="other")
    batch = _batch(store, 3)
    places = [batch.place() for _ in range(3)]
    places[2].claimed(other)  # runs throughout
    with _sent("TransactWriteItems") as sent, ThreadPoolExecutor(2) as pool:
        first_ended = _ending_in(pool, store, first, places[0])
        _until(lambda: places[0].state == "waiting")
        assert not first_ended.done()
        second_ended = _ending_in(pool, store, second, places[1])
        first_ended.result(JOIN_SECONDS), second_ended.result(JOIN_SECONDS)
        assert places[2].state == "running"
    places[2].leave()

    assert len(sent) == 1
    assert _parent(store).status is JobStatus.DONE
    assert _parent(store, "other").status is JobStatus.WAITING


def test_a_child_whose_sibling_runs_past_the_wait_writes_alone(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `BatchEndings.end`'s `if waiter in self._waiting[group] and left <= 0:` as `if False:`
    (the child waits as long as its sibling runs)."""
    first, second = _waiting_parent(store, 2)
    batch = _batch(store, 2, wait=0.01)  # a real bound, the subject here: the sibling never ends in it
    places = [batch.place() for _ in range(2)]
    places[1].claimed(second)
    with ThreadPoolExecutor(1) as pool:
        ending = _ending_in(pool, store, first, places[0])
        try:
            alone = ending.result(JOIN_SECONDS)
        except TimeoutError:
            places[1].leave()  # frees the stuck child, so the test fails rather than hangs
            raise
    assert alone.parent_finished is None
    assert (_parent(store).children.done, _parent(store).status) == (1, JobStatus.WAITING)

    with ThreadPoolExecutor(1) as pool:
        last = _ending_in(pool, store, second, places[1]).result(JOIN_SECONDS)
    assert last.parent_finished is not None
    assert _parent(store).status is JobStatus.DONE


def test_every_thread_of_the_batch_waiting_writes_though_a_message_is_left_unclaimed(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Two threads for three messages: both end as children of `fan` while the third message waits for
    a thread; they must not wait for it. Broken line: `BatchEndings._ready`'s `or self._waiters >=
    self._threads` removed (both wait until their bound)."""
    first, second, _third = _waiting_parent(store, 3)
    batch = _batch(store, 3, threads=2)
    with _sent("TransactWriteItems") as sent, ThreadPoolExecutor(2) as pool:
        ended = [_ending_in(pool, store, job, batch.place()) for job in (first, second)]
        [future.result(JOIN_SECONDS) for future in ended]

    assert len(sent) == 1
    assert (_parent(store).children.done, _parent(store).children.pending) == (2, 1)


def test_a_stale_sibling_leaves_the_others_to_write_alone_with_exact_counts(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """One child's attempt lost its lease (a newer attempt claimed the child): the group's transaction is
    refused and every child writes alone; the stale one is told so, the others count. Broken line:
    `BatchEndings.end`'s `return waiter.ended or self._store.end_child(ending)` as `return waiter.ended or
    Ended(None)` (children whose group was refused are never written)."""
    jobs = _waiting_parent(store, 3)
    clock.advance(61)
    newer = store.claim(jobs[0].job_id, 60)  # type: ignore[attr-defined]
    batch = _batch(store, 3)
    with ThreadPoolExecutor(3) as pool:
        ended = [_ending_in(pool, store, job, batch.place()) for job in jobs]
        with pytest.raises(StaleAttemptError):
            ended[0].result(JOIN_SECONDS)
        assert all(future.result(JOIN_SECONDS).parent_finished is None for future in ended[1:])
    parent = _parent(store)
    assert (parent.status, parent.children.done, parent.children.pending) == (JobStatus.WAITING, 2, 1)

    assert store.succeed(newer, {}).parent_finished is not None
    assert (_parent(store).status, _parent(store).children.done) == (JobStatus.DONE, 3)


def test_counters_moved_between_the_groups_read_and_its_write_are_decided_again(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sibling in another batch ends alone after the group read the counters: the group's condition
    fails, it decides again from the counters the cancellation handed back, and holds the last child.
    Broken line: `ChildEndings._end_chunk`'s counters condition as `f"attribute_exists(#{CHILDREN_FINISHED})"`
    (the group writes on a stale read: the parent is never finished)."""
    alone, *together = _waiting_parent(store, 3)
    write = transactions.write
    interleaved: list[Ended] = []

    def sibling_first(ddb: Any, operations: Any, puts: Any = (), **kwargs: Any) -> None:
        if len(operations) > 2 and not interleaved:
            interleaved.append(store.succeed(alone, {}))
        write(ddb, operations, puts, **kwargs)

    monkeypatch.setattr(transactions, "write", sibling_first)
    endings = [_ending(store, job) for job in together]
    results = store.end_children(endings)

    assert interleaved
    assert interleaved[0].parent_finished is None
    assert results[0] is not None
    assert results[0].parent_finished is not None
    assert (_parent(store).status, _parent(store).children.done) == (JobStatus.DONE, 3)


def _ending(store: JobStore, job: Job, owner: str = OWNER, puts: tuple[Put, ...] = ()) -> ChildEnding:
    """The done a worker's attempt of `job` would write, as `JobStore.succeed` hands it over."""
    handed: list[ChildEnding] = []

    class Keep:
        def end(self, ending: ChildEnding) -> Ended:
            handed.append(ending)
            return Ended(None)

    store.succeed(job, {"ok": True}, puts, Keep())
    (ending,) = handed
    return dataclasses.replace(ending, owner=owner)


def test_a_group_is_one_parents_children_of_one_client(pipeline: Pipeline, store: JobStore) -> None:
    """An ending that names another client is not written with its siblings (nor is anything else), and
    no group is written on counters another client owns. Broken lines: `ChildEndings.end_together`'s
    check of `(e.parent_id, e.owner)` removed; `_end_chunk`'s `armed.get(OWNER) != owner or` removed."""
    first, second = _waiting_parent(store, 2)
    with _sent("TransactWriteItems") as sent:
        mixed = store.end_children([_ending(store, first), _ending(store, second, owner="client-b")])
        foreign = store.end_children([_ending(store, job, owner="client-b") for job in (first, second)])
    assert mixed == [None, None]
    assert foreign == [None, None]
    assert sent == []
    assert _parent(store).children.done == 0


def test_a_group_too_big_for_one_transaction_is_split_within_awss_bounds(
    pipeline: Pipeline, store: JobStore
) -> None:
    """AWS takes at most 100 items in a transaction (moto takes more): 60 children with a log line each
    are 120 items, written in two transactions. Broken line: `children._GROUP_MAX_ITEMS` as `1000`."""
    jobs = _waiting_parent(store, 60)
    endings = []
    for n, job in enumerate(jobs):
        line = Put(pipeline.table, marshal({"jobId": f"line-{n}", "note": "delivered"}))
        endings.append(_ending(store, job, puts=(line,)))
    with _sent("TransactWriteItems") as sent:
        results = store.end_children(endings)

    assert all(result is not None for result in results)
    assert [len(t["TransactItems"]) <= children.TRANSACTION_MAX_ITEMS for t in sent] == [True, True]
    assert (_parent(store).status, _parent(store).children.done) == (JobStatus.DONE, 60)


def test_endings_are_cut_into_runs_under_awss_size_bound_for_one_transaction() -> None:
    """AWS refuses a transaction over 4 MB in all (moto does not). Broken line: `children._chunks`'
    `weight + ending.weight > _GROUP_MAX_BYTES` as `False`."""
    change = Update(assign={}, condition="")
    heavy = [ChildEnding(f"c{n}", PARENT, OWNER, change, JobStatus.DONE, (), 900 * 1024) for n in range(8)]
    runs = list(children._chunks(heavy))
    assert [len(run) for run in runs] == [3, 3, 2]
    assert all(sum(e.weight for e in run) + 512 * 1024 <= children.TRANSACTION_MAX_BYTES for run in runs)


def test_children_end_alone_when_their_transaction_fails(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `BatchEndings._write`'s `except Exception:` as `except ValueError:` (the writer's
    error leaves its own child unwritten)."""
    jobs = _waiting_parent(store, 3)

    def unavailable(endings: Any) -> Any:
        raise ConnectionError("DynamoDB unreachable")

    monkeypatch.setattr(store, "end_children", unavailable)
    batch = _batch(store, 3)
    with ThreadPoolExecutor(3) as pool:
        ended = [_ending_in(pool, store, job, batch.place()) for job in jobs]
        finished = [future.result(JOIN_SECONDS).parent_finished for future in ended]
    assert [f is not None for f in finished].count(True) == 1
    assert (_parent(store).status, _parent(store).children.done) == (JobStatus.DONE, 3)


def test_a_child_waits_as_long_as_its_batch_has_run_within_the_floor_and_the_most(
    pipeline: Pipeline, store: JobStore
) -> None:
    """A loaded machine spreads a batch's endings out as much as it slows the batch. Broken line:
    `BatchEndings.wait_at`'s `max(self._wait_seconds, now - self._started)` as `self._wait_seconds`."""
    clock = Clock(start=100.0)
    remaining = [60_000]
    batch = BatchEndings(store, 3, 3, 1.0, 5.0, lambda: remaining[0], clock=clock)
    assert batch.wait_at(100.2) == 1.0
    assert batch.wait_at(103.0) == 3.0
    assert batch.wait_at(109.0) == 5.0
    remaining[0] = 2_500  # the invocation keeps its last second
    assert batch.wait_at(109.0) == 1.5
