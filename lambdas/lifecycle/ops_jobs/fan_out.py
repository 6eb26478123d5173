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

from dataclasses import dataclass, replace
from typing import Any

from lambdas import config
from lambdas.lifecycle.attempt.parents import child_ids
from lambdas.lifecycle.ops_jobs import job as ops
from lambdas.lifecycle.ops_jobs.job import ActionCounts
from lambdas.models.job import Job, JobAction, JobStatus
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
# The states of the children each action takes: a cancel takes every child that is not running, whether
# it waits for its message (`pending`) or for its start time (`scheduled`: a retry longer than SQS can
# delay a message). The first is the state its ops job is told.
TAKES = {
    JobAction.RETRY: (JobStatus.DEAD,),
    JobAction.CANCEL: (JobStatus.PENDING, JobStatus.SCHEDULED),
}


@dataclass(frozen=True)
class Deferred:
    """An action handed to an ops job (`job`), which the worker runs."""

    job: Job


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
    """Cancel one child that is not running (its counters move with it); False when it moved first."""
    try:
        store.cancel(child, parent)
    except JobMovedError:
        return False  # claimed meanwhile: it runs on
    log_transition(child.job_id, child.job_type, child.status, JobStatus.CANCELLED, child.attempts)
    return True


def act_on_page(
    store: JobStore,
    queue: JobQueue | None,
    action: JobAction,
    parent: Job | None,
    ids: list[str],
    counts: ActionCounts,
) -> Job | None:
    """Apply `action` to the children among `ids` in the state it takes, as each stands now; the parent
    as now known (None once it is gone). A retry needs the `queue` to send the retried children."""
    for child in store.get_many(ids):
        if parent is None or child.status not in TAKES[action]:
            continue
        counts.matched += 1
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
            counts.applied += 1
        else:
            counts.skipped += 1
    return parent


def start_ops_job(store: JobStore, queue: JobQueue, parent: Job, action: JobAction) -> Job:
    """Store and queue the ops job that applies `action` to every child of `parent`."""
    total = parent.children.total if parent.children else len(child_ids(parent))
    payload = ops.OpsPayload(
        action=action,
        status=TAKES[action][0],
        before=millis(store.now()),
        limit=max(total, 1),
        fan_out=parent.job_id,
    )
    return ops.store_ops_job(store, queue, payload, parent.owner)


class FanOutChildren:
    """A fan-out's children as an ops job's pages (`ops.Pages`), from an offset in their order; once
    done, a cancel cancels the fan-out itself."""

    def __init__(self, store: JobStore, queue: JobQueue, action: JobAction, parent_id: str) -> None:
        self._store = store
        self._queue = queue
        self._action = action
        self._parent = store.get(parent_id)
        self._ids = child_ids(self._parent) if self._parent else []

    # `room` goes unused: the job's limit is its number of children, so every page fits.
    def act(self, position: Any, room: int, counts: ActionCounts) -> Any:  # noqa: ARG002
        at = int(position or 0)
        if at >= len(self._ids):
            return None
        page = self._ids[at : at + ops.PAGE_SIZE]
        self._parent = act_on_page(self._store, self._queue, self._action, self._parent, page, counts)
        following = at + ops.PAGE_SIZE
        return following if following < len(self._ids) else None

    def finish(self) -> None:
        if self._action == JobAction.CANCEL and self._parent is not None:
            cancel_parent(self._store, self._parent.job_id)


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
