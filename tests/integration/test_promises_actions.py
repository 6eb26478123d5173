"""A caller's retry racing another change: the 409 names what moved, and a moved child does not stop
the others. Found by `make mutate` (mutants of `lambdas/lifecycle/actions.py` no test failed on).

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from collections.abc import Callable

import boto3
import pytest

from lambdas.lifecycle import actions
from lambdas.lifecycle.errors import NotRetryableError
from lambdas.models.job import Job, JobStatus
from lambdas.store import codec
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.integration.test_operations import ALICE, _dead, _fan_out
from tests.support.pipeline import Pipeline


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
    assert _job(store, "fan").status is JobStatus.DONE  # the last child's write finished it
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
        store, monkeypatch, 1, lambda job: JobStore.reopen(store, _job(store, other), store.get("fan"), 60)
    )

    _assert_all_retried(store, actions.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "fan"), children)


def test_a_child_that_moved_meanwhile_is_left_and_the_others_are_retried(
    pipeline: Pipeline, store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `fan_out.act_on_page`'s `continue` after a moved child as `break`."""
    children = _finished_fan_out(store, 3)
    # the second child is retried by another caller just before ours reaches it
    _meanwhile(store, monkeypatch, 2, lambda job: JobStore.reopen(store, job, store.get("fan"), 60))

    _assert_all_retried(store, actions.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "fan"), children)


def _assert_all_retried(store: JobStore, retried: Job | actions.Deferred, children: list[str]) -> None:
    assert isinstance(retried, Job)
    assert retried.status is JobStatus.WAITING
    assert [_job(store, child).status for child in children] == [JobStatus.PENDING] * len(children)
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
        actions.retry_job(store, JobQueue(pipeline.queue_url), ALICE, "j")


def _job(store: JobStore, job_id: str) -> Job:
    job = store.get(job_id)
    assert job is not None
    return job
