"""A resumed bulk action continues after the last saved page even when that page's jobs are still in
the listed state (skipped ones), so none is counted or acted on twice.

Found by `make mutate` (a mutant of `bulk.run_bulk` no test failed on: the existing resume test only
has jobs that leave the listed state, so starting over lists the same remainder). The test was first
run against the one-line break its docstring names, seen to fail, then restored.
"""

from typing import Any

import pytest

from lambdas.lifecycle import bulk
from lambdas.models.api import BulkRequest
from lambdas.models.job import JobStatus
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from tests.integration.test_bulk import OPERATOR, _dead_jobs
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock


def test_a_resumed_bulk_retry_does_not_list_its_skipped_first_page_again(
    pipeline: Pipeline, store: JobStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broken line: `run_bulk`'s saved progress `{**progress, "cursor": cursor}` as `"CURSOR"`."""
    queue = JobQueue(pipeline.queue_url)
    dead = _dead_jobs(store, bulk.PAGE_SIZE + 20)
    clock.advance(1)
    job = bulk.start_bulk(store, queue, OPERATOR, "retry", BulkRequest())
    first = store.claim(job.job_id, 60)
    seen: list[str] = []
    real_apply = bulk._apply

    def skip_page_one_then_crash(*args: Any) -> bool:
        if len(seen) == bulk.PAGE_SIZE:
            raise RuntimeError("the worker dies")
        seen.append(args[3])
        return False  # skipped: the job stays dead, so it stays in the listing

    monkeypatch.setattr(bulk, "_apply", skip_page_one_then_crash)
    with pytest.raises(RuntimeError):
        bulk.run_bulk(store, queue, job.job_id, first.attempts, lambda: 60_000, job.payload)
    monkeypatch.setattr(bulk, "_apply", real_apply)
    clock.advance(61)
    second = store.claim(job.job_id, 60)

    result = bulk.run_bulk(store, queue, job.job_id, second.attempts, lambda: 60_000, job.payload)

    assert result == {
        "action": "retry",
        "matched": len(dead),
        "applied": 20,
        "skipped": bulk.PAGE_SIZE,
        "finished": True,
    }
    assert sum(j.status is JobStatus.DEAD for j in store.get_many(dead)) == bulk.PAGE_SIZE
