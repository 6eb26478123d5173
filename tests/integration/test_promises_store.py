"""Job records over their life: expiry only once finished, and fan-out parents that always finish.

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

import json
import uuid
from typing import Any

import boto3
import pytest
from pydantic import BaseModel

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import AwaitChildren, JobContext, JobType
from lambdas.models.job import NewJob
from lambdas.store import schema
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock
from tests.support.transitions import Lines, transitions

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
        JobQueue(pipeline.queue_url).send_many(store.create_children(list(children.values())))
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
    `Worker._succeed`'s `parents.settle(...)` after `await_children`)."""
    parent_id, parent, children = parent_with_children(["test_echo", "test_permanent"])
    pipeline.run_worker(list(children.values()))  # the children were quicker than their parent

    pipeline.run_worker([parent])

    job = pipeline.job(parent_id)
    assert job["status"] == "done"
    assert job["children"] == {"total": 2, "pending": 0, "delivered": 1, "failed": 1, "cancelled": 0}


def test_children_of_a_parent_that_is_gone_still_finish(
    pipeline: Pipeline, parent_with_children: Any
) -> None:
    """Broken line: `ChildWrites._end_child`'s `if seen is None:` as `if False:` (a missing parent is
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
