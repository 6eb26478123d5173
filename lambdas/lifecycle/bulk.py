"""Bulk actions: an operator retries or cancels every job a filter matches, in the worker.

`start_bulk` (the API, operator key only) stores a `bulk_action` job and queues it; the API answers at
once, whatever the number of jobs. Its run (`run_bulk`, the lifecycle's ops job type, `ops`) pages
through the operator's list for the filter, newest first, and applies the action to each job through
`retry_cancel` (one conditional write per job, so a job that moved meanwhile is skipped, never acted on
twice). After each page it saves its progress (counts and list positions) in the job's `result`,
conditioned on its attempt, so a run after a crash resumes after the last saved page; the jobs of a
page cut short by a crash have left the filtered status (retried or cancelled), so they are not listed
again (their count in `applied` is what may be lost). The filter's `before` is at most the start time:
a job that re-enters the status later (retried, then dead again) is not matched again.

With less than RESERVE_MS of the invocation left, the run saves its progress and returns
`ContinueLater`: the worker ends the attempt without counting it, and the next delivery goes on. Each
delivery does at least one page first, so a worker whose whole timeout is under RESERVE_MS still
makes progress instead of handing the job on forever.
"""

from collections.abc import Callable, Mapping
from typing import Any

from lambdas.jobs.base import ContinueLater, JobContext, JobType
from lambdas.lifecycle import ops, retry_cancel
from lambdas.lifecycle.errors import ForbiddenError, JobNotFoundError, NotCancellableError, NotRetryableError
from lambdas.lifecycle.fan_out import run_fan_out_action
from lambdas.lifecycle.ops import OpsPayload
from lambdas.lifecycle.paging import shard_positions
from lambdas.lifecycle.reads import list_query
from lambdas.models.api import BulkRequest
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobAction, JobStatus
from lambdas.store.codec import millis
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

_DEFAULT_STATUS = {JobAction.RETRY: JobStatus.DEAD, JobAction.CANCEL: JobStatus.PENDING}
_EVERYONE = Caller("", operator=True)


def ops_job_type(store: JobStore, queue: JobQueue) -> JobType[OpsPayload]:
    """The ops job type bound to the worker's store and queue: a bulk action, or a fan-out's."""

    def run(payload: OpsPayload, context: JobContext) -> Any:
        raw = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
        act = run_fan_out_action if payload.fan_out else run_bulk
        return act(store, queue, context.job_id, context.attempt, context.remaining_ms, raw)

    return JobType(name=ops.OPS_TYPE, payload_model=OpsPayload, run=run, public=False)


def start_bulk(
    store: JobStore, queue: JobQueue, caller: Caller, action: JobAction, request: BulkRequest
) -> Job:
    if not caller.operator:
        raise ForbiddenError("bulk actions need the operator key")
    status = request.status or _DEFAULT_STATUS[action]
    before = millis(store.now())
    if request.before is not None:
        before = min(before, millis(request.before.timestamp()))
    payload = {
        "action": action,
        "status": status.value,
        "type": request.type,
        "before": before,
        "limit": request.limit,
    }
    return ops.store_ops_job(store, queue, {k: v for k, v in payload.items() if v is not None}, caller.owner)


def run_bulk(
    store: JobStore,
    queue: JobQueue,
    job_id: str,
    attempt: int,
    remaining_ms: Callable[[], int],
    payload: Mapping[str, Any],
) -> Any:
    """Apply the action page by page from the saved progress; the final counts, or ContinueLater."""
    action, limit = JobAction(payload["action"]), int(payload["limit"])
    status = JobStatus(payload["status"])
    query = list_query(store, _EVERYONE, status, payload.get("type"), before=int(payload["before"]))
    saved = store.get(job_id)
    progress = _progress(action, saved.result if saved else None)
    positions = shard_positions(progress.pop("cursor", None), store.shards, numeric=True)
    pages = 0
    while progress["matched"] < limit:
        if pages and remaining_ms() < ops.RESERVE_MS:
            # The cursor goes with the progress: jobs a page skipped are still listed from the start.
            return ContinueLater({**progress, "cursor": _cursor(positions)})
        pages += 1
        ids, following = store.list_ids(query, min(ops.PAGE_SIZE, limit - progress["matched"]), positions)
        for target in ids:
            progress["applied" if _apply(store, queue, action, target) else "skipped"] += 1
        progress["matched"] += len(ids)
        if following is None or not ids:
            break
        positions = following
        store.save_progress(job_id, attempt, {**progress, "cursor": _cursor(positions)})
    return {**progress, "finished": True}


def _cursor(positions: Mapping[int, Any]) -> dict[str, Any]:
    return {str(n): at for n, at in positions.items()}


def _progress(action: JobAction, saved: Any) -> dict[str, Any]:
    fresh: dict[str, Any] = {"action": action, "matched": 0, "applied": 0, "skipped": 0, "finished": False}
    if isinstance(saved, dict) and saved.get("action") == action:
        fresh.update({k: saved[k] for k in ("matched", "applied", "skipped", "cursor") if k in saved})
    return fresh


def _apply(store: JobStore, queue: JobQueue, action: JobAction, job_id: str) -> bool:
    try:
        if action == JobAction.RETRY:
            retry_cancel.retry_job(store, queue, _EVERYONE, job_id)
        else:
            retry_cancel.cancel_job(store, _EVERYONE, job_id, queue)
    except (NotRetryableError, NotCancellableError, JobNotFoundError):
        return False
    return True
