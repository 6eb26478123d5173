"""Ops jobs: the lifecycle's own job type, `bulk_action`, for work a caller started that is too big for
one API call: an operator's retry or cancel of every job a filter matches (`bulk`), or a caller's retry
or cancel of a large fan-out's children (`fanOut`, `fan_out`).

It is not a plug-in: it is not in the job-type registry, `POST /jobs` refuses it like any unknown type
(only `start_bulk` and `fan_out.start_ops_job` store one, through `store_ops_job`), and the worker runs
it with the lifecycle's own store and queue (`bulk.ops_job_type`), so no job type's `JobContext`
carries the power to act on other jobs.

Both kinds run in one page loop (`run_pages`), each giving its pages (`Pages`): the listing's, from a
cursor (`bulk`), or the fan-out's children, from an offset (`fan_out`). After each page the loop saves
its progress (the counts and the position after the page) in the job's `result`, conditioned on its
attempt, so a run after a crash resumes after the last saved page. With less than RESERVE_MS of the
invocation left it returns `ContinueLater` with that progress: the worker ends the attempt without
counting it, and the next delivery goes on. Each delivery does at least one page first, so a worker
whose whole timeout is under RESERVE_MS still makes progress instead of handing the job on forever.

This module is what both kinds share, so `bulk` and `fan_out` stand on it and not on each other.
"""

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from lambdas import config
from lambdas.jobs.base import ContinueLater
from lambdas.models.job import Job, JobAction, JobStatus, NewJob
from lambdas.observability import log_transition, logger
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

OPS_TYPE = config.OPS_JOB_TYPE
OPS_MAX_ATTEMPTS = 3
PAGE_SIZE = 100
# A page is up to 100 conditional writes and sends: a few seconds. Stop before the worker's timeout.
RESERVE_MS = 15_000


class OpsPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    action: JobAction
    status: JobStatus = Field(description="The state the jobs acted on are in (the action's own).")
    job_type: str | None = Field(default=None, alias="type")
    before: int = Field(ge=0, description="Only jobs that entered the status before this (epoch ms).")
    limit: int = Field(ge=1, le=10_000)
    fan_out: str | None = Field(
        default=None,
        alias="fanOut",
        min_length=1,
        max_length=64,
        description="Act on this fan-out's children instead of the listing (a large fan-out's retry or cancel).",
    )


@dataclass
class ActionCounts:
    """What an action did to the jobs it was given: in the state it takes (matched), then changed by it
    (applied) or moved by someone else first (skipped)."""

    matched: int = 0
    applied: int = 0
    skipped: int = 0


class Pages(Protocol):
    """An ops job's jobs, a page at a time, from a position it saved (JSON; None: the start)."""

    def act(self, position: Any, room: int, counts: ActionCounts) -> Any:
        """Apply the action to the page at `position`, at most `room` jobs matched, adding to `counts`;
        the position after the page, or None when there is nothing after it."""
        ...

    def finish(self) -> None:
        """What is left once every page is done."""
        ...


def store_ops_job(store: JobStore, queue: JobQueue, payload: OpsPayload, owner: str) -> Job:
    """An ops job stored and queued; a failed send is left to the recovery sweep."""
    job = store.put_new(
        NewJob(
            job_id=str(uuid.uuid4()),
            job_type=OPS_TYPE,
            payload=payload.model_dump(mode="json", by_alias=True, exclude_none=True),
            max_attempts=OPS_MAX_ATTEMPTS,
            owner=owner,
        )
    )
    log_transition(job.job_id, job.job_type, "new", JobStatus.PENDING, 0)
    try:
        queue.send_job(job)
    except Exception:
        logger.exception("SendMessage failed after an ops job was stored; the recovery sweep will send it")
    return job


def run_pages(
    store: JobStore,
    job_id: str,
    attempt: int,
    remaining_ms: Callable[[], int],
    payload: OpsPayload,
    pages: Pages,
) -> Any:
    """Apply the action page by page from the saved progress: the final counts, or ContinueLater."""
    saved = store.get(job_id)
    counts, position = _resumed(payload.action, saved.result if saved else None)
    done = 0
    while counts.matched < payload.limit:
        if done and remaining_ms() < RESERVE_MS:
            # The position goes with the counts: the next delivery goes on from there.
            return ContinueLater(_progress(payload.action, counts, position))
        done += 1
        position = pages.act(position, payload.limit - counts.matched, counts)
        if position is None:
            break
        store.save_progress(job_id, attempt, _progress(payload.action, counts, position))
    pages.finish()
    return {**_progress(payload.action, counts, None), "finished": True}


def _progress(action: JobAction, counts: ActionCounts, position: Any) -> dict[str, Any]:
    progress: dict[str, Any] = {"action": action, **vars(counts), "finished": False}
    return progress if position is None else {**progress, "position": position}


def _resumed(action: JobAction, saved: Any) -> tuple[ActionCounts, Any]:
    """The counts and position a run of `action` saved; fresh ones for anything else."""
    if not isinstance(saved, dict) or saved.get("action") != action:
        return ActionCounts(), None
    counts = ActionCounts(**{k: int(saved[k]) for k in ("matched", "applied", "skipped") if k in saved})
    return counts, saved.get("position")
