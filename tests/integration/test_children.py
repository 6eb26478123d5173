"""Parent jobs that hand their work to children: exact counts, no duplicate children, a parent that finishes."""

import json
import time
import uuid

import pytest
from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs import registry
from lambdas.jobs.base import AwaitChildren, JobContext, JobType, RetryableJobError
from lambdas.lifecycle.recovery import Sweeper
from lambdas.models.job import JobStatus, NewJob
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.support.pipeline import Pipeline
from tests.support.stores import store_from_env

pytestmark = pytest.mark.usefixtures("test_types")


class SpawnPayload(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    children: list[str] = Field(description="test type of each child")
    fail_after_spawning: int = Field(default=0, alias="failAfterSpawning")


def spawn(payload: SpawnPayload, context: JobContext) -> AwaitChildren:
    children = [
        NewJob(
            job_id=str(uuid.uuid5(uuid.UUID(context.job_id), str(i))),
            job_type=child_type,
            payload={"value": str(i)} if child_type != "test_flaky" else {"failTimes": 1},
            max_attempts=2,
            parent_id=context.job_id,
        )
        for i, child_type in enumerate(payload.children)
    ]
    context.create_children(children)
    if context.attempt <= payload.fail_after_spawning:
        raise RetryableJobError("crashed after spawning")
    return AwaitChildren(total=len(children), result={"spawned": len(children)})


@pytest.fixture(autouse=True)
def _spawner() -> None:
    registry.register(JobType("test_spawn", SpawnPayload, spawn))


def test_parent_waits_for_its_children_and_counts_them_exactly(pipeline: Pipeline) -> None:
    kinds = ["test_echo"] * 5 + ["test_permanent"] * 2 + ["test_flaky"] * 3
    parent_id = pipeline.submit("test_spawn", {"children": kinds})

    pipeline.run_worker()  # the parent spawns
    parent = pipeline.job(parent_id)
    assert parent["status"] == "waiting"
    assert parent["children"] == {"total": 10, "pending": 10, "delivered": 0, "failed": 0, "cancelled": 0}

    pipeline.drain(letters_return=True)  # a dead child's letter waits on the DLQ for its parent

    parent = pipeline.job(parent_id)
    assert parent["status"] == "done"
    assert parent["children"] == {"total": 10, "pending": 0, "delivered": 8, "failed": 2, "cancelled": 0}
    assert parent["result"] == {"spawned": 10}
    assert len(pipeline.alerts()) == 1  # one for the parent, listing its two dead children


def test_a_re_run_parent_does_not_duplicate_or_reset_children(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `create_children`'s `fresh = [c for c in children if c.job_id not in existing]` as
    `fresh = list(children)` (a re-run rewrites the children that exist and sends them again)."""
    monkeypatch.setattr("random.random", lambda: 1.0)  # every backoff is the whole window: 10 s hidden
    parent_id = pipeline.submit(
        "test_spawn", {"children": ["test_echo", "test_flaky"], "failAfterSpawning": 1}
    )
    (parent,) = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker([parent])  # attempt 1 spawns both children, then crashes
    # the children make progress while the parent waits out its backoff: one done, one retried
    pipeline.run_worker()
    child_ids = [str(uuid.uuid5(uuid.UUID(parent_id), str(i))) for i in range(2)]
    before = [store.get(i) for i in child_ids]
    assert [(c.status, c.attempts) for c in before if c] == [(JobStatus.DONE, 1), (JobStatus.PENDING, 1)]

    pipeline.make_visible([parent])
    pipeline.run_worker()  # attempt 2 spawns again

    assert [store.get(i) for i in child_ids] == before  # neither child was rewritten...
    assert pipeline.visible(pipeline.queue_url) == 0  # ...nor sent again
    parent_job = pipeline.job(parent_id)
    assert (parent_job["status"], parent_job["attempts"]) == ("waiting", 2)
    assert parent_job["children"] == {"total": 2, "pending": 1, "delivered": 1, "failed": 0, "cancelled": 0}


def test_recovery_finishes_a_parent_whose_last_pending_child_was_cancelled(pipeline: Pipeline) -> None:
    """No child's own write finishes a parent whose last open child a caller cancelled: the sweep does.

    Broken line: `parents.settle`'s `return finish_if_complete(store, parent)` as `return None`."""
    parent_id = pipeline.submit("test_spawn", {"children": ["test_echo", "test_echo"]})
    pipeline.run_worker()
    first, second = pipeline.receive(pipeline.queue_url)
    pipeline.run_worker([first])
    second_id = json.loads(second["body"])["jobId"]
    assert pipeline.request("POST", f"/jobs/{second_id}/cancel").status == 200
    assert pipeline.job(parent_id)["status"] == "waiting"

    now = store_from_env(pipeline.env)
    later = store_from_env(pipeline.env, clock=lambda: time.time() + 3600)
    queue = JobQueue(pipeline.queue_url)

    assert Sweeper(now, queue, grace_seconds=0).sweep(lambda: True).parents_finished == 0  # not due yet
    assert Sweeper(later, queue, grace_seconds=0).sweep(lambda: True).parents_finished == 1
    parent = pipeline.job(parent_id)
    assert parent["status"] == "done"
    assert parent["children"] == {"total": 2, "pending": 0, "delivered": 1, "failed": 0, "cancelled": 1}
