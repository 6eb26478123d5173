"""Bulk actions: an operator retries or cancels every job a filter matches, in the worker.

`start_bulk` (the API, operator key only) stores a `bulk_action` job and queues it; the API answers at
once, whatever the number of jobs. Its run (`ops.run_pages` over `Listing`) pages through the
operator's list for the filter, newest first, and applies the action to each job through
`retry_cancel` (one conditional write per job, so a job that moved meanwhile is skipped, never acted on
twice). The jobs of a page cut short by a crash have left the filtered status (retried or cancelled),
so they are not listed again (their count in `applied` is what may be lost). The filter's `before` is
at most the start time: a job that re-enters the status later (retried, then dead again) is not
matched again.

`ops_job_type` is the ops job type the worker runs: a bulk action, or a large fan-out's retry or cancel
(`fan_out.FanOutChildren`), both through the one page loop of `ops`.
"""

from collections.abc import Callable, Mapping
from typing import Any

from lambdas.jobs.base import JobContext, JobType
from lambdas.lifecycle.errors import ForbiddenError, JobNotFoundError, NotCancellableError, NotRetryableError
from lambdas.lifecycle.ops_jobs import job as ops
from lambdas.lifecycle.ops_jobs.fan_out import FanOutChildren
from lambdas.lifecycle.ops_jobs.job import ActionCounts, OpsPayload
from lambdas.lifecycle.requests import retry_cancel
from lambdas.lifecycle.requests.paging import shard_positions
from lambdas.lifecycle.requests.reads import list_query
from lambdas.models.api import BulkRequest
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobAction, JobStatus
from lambdas.store.codec import millis
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

_DEFAULT_STATUS = {JobAction.RETRY: JobStatus.DEAD, JobAction.CANCEL: JobStatus.PENDING}
_EVERYONE = Caller("", operator=True)


def ops_job_type(store: JobStore, queue: JobQueue) -> JobType[OpsPayload]:
    """The ops job type bound to the worker's store and queue."""

    def run(payload: OpsPayload, context: JobContext) -> Any:
        return run_ops_job(store, queue, context.job_id, context.attempt, context.remaining_ms, payload)

    return JobType(name=ops.OPS_TYPE, payload_model=OpsPayload, run=run, public=False)


def run_ops_job(
    store: JobStore,
    queue: JobQueue,
    job_id: str,
    attempt: int,
    remaining_ms: Callable[[], int],
    payload: OpsPayload,
) -> Any:
    """One delivery of an ops job: its pages from the saved progress; the final counts, or ContinueLater."""
    pages: ops.Pages
    if payload.fan_out is not None:
        pages = FanOutChildren(store, queue, payload.action, payload.fan_out)
    else:
        pages = Listing(store, queue, payload)
    return ops.run_pages(store, job_id, attempt, remaining_ms, payload, pages)


def start_bulk(
    store: JobStore, queue: JobQueue, caller: Caller, action: JobAction, request: BulkRequest
) -> Job:
    if not caller.operator:
        raise ForbiddenError("bulk actions need the operator key")
    before = millis(store.now())
    if request.before is not None:
        before = min(before, millis(request.before.timestamp()))
    payload = OpsPayload(
        action=action,
        status=request.status or _DEFAULT_STATUS[action],
        job_type=request.type,
        before=before,
        limit=request.limit,
    )
    return ops.store_ops_job(store, queue, payload, caller.owner)


class Listing:
    """The operator's list for the filter, a page at a time from a cursor (each shard's position)."""

    def __init__(self, store: JobStore, queue: JobQueue, payload: OpsPayload) -> None:
        self._store = store
        self._queue = queue
        self._action = payload.action
        self._query = list_query(store, _EVERYONE, payload.status, payload.job_type, before=payload.before)

    def act(self, position: Any, room: int, counts: ActionCounts) -> Any:
        positions = shard_positions(position, self._store.shards, numeric=True)
        ids, following = self._store.list_ids(self._query, min(ops.PAGE_SIZE, room), positions)
        for target in ids:
            if _apply(self._store, self._queue, self._action, target):
                counts.applied += 1
            else:
                counts.skipped += 1
        counts.matched += len(ids)
        if following is None or not ids:
            return None
        return _cursor(following)

    def finish(self) -> None:
        """Nothing: each job was acted on by itself."""


def _cursor(positions: Mapping[int, Any]) -> dict[str, Any]:
    """The positions as JSON holds them (a position's pair a list), as they are saved and read back."""
    return {str(n): list(at) if isinstance(at, tuple) else at for n, at in positions.items()}


def _apply(store: JobStore, queue: JobQueue, action: JobAction, job_id: str) -> bool:
    try:
        if action == JobAction.RETRY:
            retry_cancel.retry_job(store, queue, _EVERYONE, job_id)
        else:
            retry_cancel.cancel_job(store, _EVERYONE, job_id, queue)
    except (NotRetryableError, NotCancellableError, JobNotFoundError):
        return False
    return True
