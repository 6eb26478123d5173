"""A fan-out child's terminal write: exact counts, one finisher, and a parent that moved in between.

The last child learns that it is the last from its own transaction (lambdas/store/children.py): the
parent's part fails its "not the last" condition and hands back the parent, and a second transaction
finishes it. Each test was first run against the one-line break its docstring names, seen to fail,
then restored.
"""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store import children, transactions
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from tests.support.deliveries import every_attempt
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

PARENT = "fan"


def _waiting_parent(store: JobStore, total: int) -> list[str]:
    """A parent that wrote `total` children and waits for them; the children's ids."""
    store.put_new(NewJob(job_id=PARENT, job_type="test_echo", payload={}, max_attempts=2))
    parent = store.claim(PARENT, 60)
    ids = [f"{PARENT}-child-{n}" for n in range(total)]
    store.create_children(
        [NewJob(job_id=i, job_type="test_echo", payload={}, max_attempts=2, parent_id=PARENT) for i in ids]
    )
    store.await_children(parent, total, {}, 60)
    return ids


def _parent(store: JobStore) -> Job:
    parent = store.get(PARENT)
    assert parent is not None
    assert parent.children is not None
    return parent


def test_children_finishing_at_once_count_exactly_and_one_of_them_finishes_the_parent(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `children._NOT_LAST` as `f"attribute_exists({schema.JOBS_PK})"` (no child learns
    that it is the last: the parent waits for the recovery sweep)."""
    ids = _waiting_parent(store, 20)

    def finish(child_id: str) -> bool:
        claimed = store.claim(child_id, 60)
        ended = (
            store.succeed(claimed, {}) if int(child_id.rsplit("-", 1)[1]) % 4 else store.die(claimed, "no")
        )
        return ended.parent_finished is not None

    with ThreadPoolExecutor(max_workers=10) as pool:
        finishers = sum(pool.map(finish, ids))

    parent = _parent(store)
    assert finishers == 1
    assert parent.status is JobStatus.DONE
    assert (parent.children.done, parent.children.dead, parent.children.pending) == (15, 5, 0)


def test_a_parent_that_moved_between_the_last_childs_two_writes_is_not_finished_early(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller retries the dead sibling after the last child saw itself last but before it finished the
    parent: the child decides again, and the parent waits for the sibling.

    Broken line: `children._LAST` as `"#status = :waiting"` (the finish no longer checks the count)."""
    first, second = _waiting_parent(store, 2)
    dead = store.fail(store.claim(first, 60), "gone")
    running = store.claim(second, 60)
    write = transactions.write
    retried: list[Job] = []

    def retry_sibling_first(ddb: Any, operations: Any, puts: Any = (), **kwargs: Any) -> None:
        finishing = any(
            op.get("Update", {}).get("ConditionExpression") == children._LAST for _, op in operations
        )
        if finishing and not retried:
            retried.append(store.reopen(dead, _parent(store), 60))
        write(ddb, operations, puts, **kwargs)

    monkeypatch.setattr(transactions, "write", retry_sibling_first)

    assert store.succeed(running, {}).parent_finished is None
    assert retried
    parent = _parent(store)
    assert parent.status is JobStatus.WAITING
    assert (parent.children.done, parent.children.dead, parent.children.pending) == (1, 0, 1)

    finished = store.succeed(store.claim(first, 60), {}).parent_finished
    assert finished is not None
    assert (finished.job_id, finished.job_type) == (_parent(store).job_id, _parent(store).job_type)
    assert (_parent(store).status, _parent(store).children.done) == (JobStatus.DONE, 2)


class _Nothing(BaseModel):
    pass


def test_an_attempt_that_lost_its_lease_still_logs_the_delivery_it_made(
    pipeline: Pipeline, store: JobStore, clock: Clock
) -> None:
    """Its log line would have committed with its outcome; the outcome is refused (a newer attempt owns
    the job), and the line is written on its own: the delivery happened all the same.

    Broken line: `Worker._stale`'s `recorded.write_alone()` removed."""

    def deliver_slowly(payload: _Nothing, context: JobContext) -> dict[str, bool]:
        context.record_delivery(
            DeliveryAttempt(
                fanout_id=PARENT,
                delivery_id=context.job_id,
                endpoint_id="ep-1",
                event_type="invoice.paid",
                attempt=context.attempt,
                attempted_at=iso_time(clock()),
                outcome=DeliveryOutcome.DELIVERED,
                latency_ms=1,
                http_status=204,
            )
        )
        clock.advance(86_400)  # meanwhile its lease ran out, and another attempt took the job over
        store.claim(context.job_id, 60)
        return {"delivered": True}

    registry.register(JobType("test_slow_delivery", _Nothing, deliver_slowly))
    job_id = pipeline.submit("test_slow_delivery", {})

    assert pipeline.run_worker() == {"batchItemFailures": []}

    job = store.get(job_id)
    assert job is not None
    assert (job.status, job.attempts) == (JobStatus.PROCESSING, 2)
    [line] = every_attempt(DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE]), PARENT)
    assert (line.delivery_id, line.attempt, line.outcome) == (job_id, 1, DeliveryOutcome.DELIVERED)
