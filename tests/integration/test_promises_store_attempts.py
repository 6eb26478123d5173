"""What the store writes when an attempt ends or a caller retries a dead job: the attempt's history
entry (the API's `history`) and the keys the job is listed under.

Each test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from lambdas.lifecycle.reads import list_query
from lambdas.models.caller import Caller
from lambdas.models.job import Attempt, AttemptOutcome, JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store.jobs import JobStore
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

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
    """Broken line: `JobActions.reopen`'s (store/actions.py) `self._items.state(job.job_id, job.owner,
    ...)` with the owner `None` (the job is keyed under no owner's pending list)."""
    _new(store, "j", "o")
    dead = store.fail(store.claim("j", LEASE), "boom")

    store.reopen(dead, None, 60)

    query = list_query(store, Caller(owner="o"), JobStatus.PENDING, None)
    assert store.list_ids(query, 10, {})[0] == ["j"]
