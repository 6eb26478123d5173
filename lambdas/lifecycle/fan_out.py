"""A caller's retry or cancel of a fan-out's children, each acting on the child's and the parent's
current state, and the ops job that does it for a large fan-out.

- Each child is read when its page is reached and acted on only if it is in the state the action
  takes (`dead` for retry, `pending` for cancel), by one conditional transaction on the child and its
  fan-out's counters (`store.reopen`, `store.cancel`). A retry's transaction also depends on the
  parent: a parent seen finished goes back to `waiting` with it; a waiting one is changed only through
  its counters, conditioned on "not finished". When the parent's part is refused (a retried sibling
  ran at once and finished the parent, another caller moved it) the parent is read again and the child
  decided again, so no dead child is left dead because of an old reading of the parent. A child that
  moved itself (retried by another caller meanwhile) is counted `skipped`.
- A fan-out of at most INLINE_CHILDREN children is acted on in the request: one BatchGetItem, then one
  transaction (and for a retry one SendMessage) per child, under 60 calls, well inside the API's 10 s.
  A larger one (up to 1000 children: about 3000 calls in sequence) is handed to an ops job, a
  `bulk_action` with `fanOut`, as the bulk actions are: the API answers 202 with the ops job, and the
  worker runs it page by page, saving its offset after each page and handing on (`ContinueLater`) when
  its time is short, so nothing is left half done by a request that timed out.
"""

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lambdas import config
from lambdas.jobs.base import ContinueLater
from lambdas.lifecycle.parents import child_ids
from lambdas.models.job import Job, JobAction, JobStatus, NewJob
from lambdas.observability import log_transition, logger
from lambdas.store.codec import millis
from lambdas.store.errors import JobMovedError, ParentMovedError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

INLINE_CHILDREN = config.FAN_OUT_INLINE_CHILDREN
# A parent put back to `waiting` is checked by the sweeper after this long, if no child settles it first.
PARENT_RECHECK_SECONDS = 60
# Each round is a change someone else made to the parent between its reading and the child's write.
PARENT_ROUNDS = 5
TAKES = {JobAction.RETRY: JobStatus.DEAD, JobAction.CANCEL: JobStatus.PENDING}


@dataclass(frozen=True)
class Deferred:
    """An action handed to an ops job (`job`), which the worker runs."""

    job: Job


@dataclass
class Tally:
    matched: int = 0
    applied: int = 0
    skipped: int = 0


def announce(queue: JobQueue, job: Job) -> None:
    """A job a caller retried: its transition, then its message (the sweep sends it if this fails)."""
    log_transition(job.job_id, job.job_type, JobStatus.DEAD, JobStatus.PENDING, 0, "retried by a caller")
    try:
        queue.send_job(job)
    except Exception:
        logger.exception(
            "SendMessage failed after a retry; the recovery sweep will send it", jobId=job.job_id
        )


def retry_child(store: JobStore, queue: JobQueue, parent: Job, child: Job) -> tuple[bool, Job | None]:
    """Retry one dead child on its parent's current state: (retried, the parent as now known; None
    when it is gone). JobMovedError when the child itself was not dead any more."""
    current: Job | None = parent
    for _ in range(PARENT_ROUNDS):
        if current is None or current.status is JobStatus.CANCELLED:
            return False, current
        try:
            store.reopen(child, current, PARENT_RECHECK_SECONDS)
        except ParentMovedError:
            current = store.get(parent.job_id)
            continue
        announce(queue, child)
        if current.status in (JobStatus.DONE, JobStatus.DEAD):
            log_transition(
                current.job_id, current.job_type, current.status, JobStatus.WAITING, current.attempts
            )
            current = replace(current, status=JobStatus.WAITING)
        return True, current
    logger.warning("a dead child's parent kept changing; left dead", childId=child.job_id)
    return False, current


def cancel_child(store: JobStore, parent: Job, child: Job) -> bool:
    """Cancel one pending child (its counters move with it); False when it moved first."""
    try:
        store.cancel(child, parent)
    except JobMovedError:
        return False  # claimed meanwhile: it runs on
    log_transition(child.job_id, child.job_type, JobStatus.PENDING, JobStatus.CANCELLED, child.attempts)
    return True


def act_on_page(
    store: JobStore,
    queue: JobQueue | None,
    action: JobAction,
    parent: Job | None,
    ids: list[str],
    tally: Tally,
) -> Job | None:
    """Apply `action` to the children among `ids` in the state it takes, as each stands now; the parent
    as now known (None once it is gone). A retry needs the `queue` to send the retried children."""
    for child in store.get_many(ids):
        if parent is None or child.status is not TAKES[action]:
            continue
        tally.matched += 1
        if action == JobAction.CANCEL:
            done = cancel_child(store, parent, child)
        elif queue is None:
            raise ValueError("a retry sends the children it retried: it needs the queue")
        else:
            try:
                done, parent = retry_child(store, queue, parent, child)
            except JobMovedError:
                done = False
        if done:
            tally.applied += 1
        else:
            tally.skipped += 1
    return parent


def start_ops_job(store: JobStore, queue: JobQueue, parent: Job, action: JobAction) -> Job:
    """Store and queue the ops job that applies `action` to every child of `parent`."""
    total = parent.children.total if parent.children else len(child_ids(parent))
    payload = {
        "action": action,
        "status": TAKES[action].value,
        "before": millis(store.now()),
        "limit": max(total, 1),
        "fanOut": parent.job_id,
    }
    return store_ops_job(store, queue, payload, parent.owner)


def store_ops_job(store: JobStore, queue: JobQueue, payload: Mapping[str, Any], owner: str) -> Job:
    """An ops job (`bulk_action`) stored and queued; a failed send is left to the recovery sweep."""
    from lambdas.lifecycle.bulk import BULK_MAX_ATTEMPTS, BULK_TYPE  # bulk acts through this module

    job = store.put_new(
        NewJob(
            job_id=str(uuid.uuid4()),
            job_type=BULK_TYPE,
            payload=dict(payload),
            max_attempts=BULK_MAX_ATTEMPTS,
            owner=owner,
        )
    )
    log_transition(job.job_id, job.job_type, "new", JobStatus.PENDING, 0)
    try:
        queue.send_job(job)
    except Exception:
        logger.exception("SendMessage failed after an ops job was stored; the recovery sweep will send it")
    return job


def run_fan_out_action(
    store: JobStore,
    queue: JobQueue,
    job_id: str,
    attempt: int,
    remaining_ms: Callable[[], int],
    payload: Mapping[str, Any],
) -> Any:
    """The ops job's run: the action on the fan-out's children page by page from the saved offset, then
    (cancel) the fan-out itself; the final counts, or ContinueLater."""
    from lambdas.lifecycle.bulk import PAGE_SIZE, RESERVE_MS  # bulk acts through this module

    action = JobAction(payload["action"])
    parent = store.get(str(payload["fanOut"]))
    saved = store.get(job_id)
    progress = _progress(action, saved.result if saved else None)
    ids = child_ids(parent) if parent else []
    pages = 0
    while progress["offset"] < len(ids):
        if pages and remaining_ms() < RESERVE_MS:
            return ContinueLater(progress)
        pages += 1
        at = progress["offset"]
        tally = Tally()
        parent = act_on_page(store, queue, action, parent, ids[at : at + PAGE_SIZE], tally)
        progress.update(
            matched=progress["matched"] + tally.matched,
            applied=progress["applied"] + tally.applied,
            skipped=progress["skipped"] + tally.skipped,
            offset=at + PAGE_SIZE,
        )
        store.save_progress(job_id, attempt, progress)
    if action == JobAction.CANCEL and parent is not None:
        cancel_parent(store, parent.job_id)
    return {**progress, "finished": True}


def cancel_parent(store: JobStore, parent_id: str) -> Job | None:
    """The fan-out itself, once its pending children are cancelled: if it is still waiting."""
    parent = store.get(parent_id)
    if parent is None or parent.status is not JobStatus.WAITING:
        return parent
    try:
        cancelled = store.cancel(parent, None)
    except JobMovedError:
        return store.get(parent_id)
    log_transition(parent.job_id, parent.job_type, parent.status, JobStatus.CANCELLED, parent.attempts)
    return cancelled


def _progress(action: JobAction, saved: Any) -> dict[str, Any]:
    fresh: dict[str, Any] = {
        "action": action,
        "matched": 0,
        "applied": 0,
        "skipped": 0,
        "offset": 0,
        "finished": False,
    }
    if isinstance(saved, dict) and saved.get("action") == action:
        fresh.update({k: int(saved[k]) for k in ("matched", "applied", "skipped", "offset") if k in saved})
    return fresh
