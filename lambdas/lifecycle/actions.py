"""What a caller may do to a job: retry it, cancel it. Each is one conditional write per job (with its
fan-out parent's counters in the same transaction), conditioned on the state the caller saw, so a
second concurrent call gets 409 and never a double effect.

- retry: a `dead` job goes back to `pending` with a fresh attempt budget, then its message is sent
  (if SendMessage fails the job is still `pending` and due, and the recovery sweep sends it). A fan-out
  parent (`done` or `dead`) with dead children: each dead child is retried that way, the first one's
  transaction moving the parent back to `waiting`.
- cancel: a `pending` job becomes `cancelled` (a message that arrives later cannot claim it: claims
  take only `pending` or an expired `processing`). A `waiting` fan-out: its pending children are
  cancelled one by one, then the parent.
"""

from lambdas.lifecycle.errors import NotCancellableError, NotRetryableError
from lambdas.lifecycle.reads import child_ids, find_job
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.errors import JobMovedError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

# A parent put back to `waiting` is checked by the sweeper after this long, if no child settles it first.
PARENT_RECHECK_SECONDS = 60


def retry_job(store: JobStore, queue: JobQueue, caller: Caller, job_id: str) -> Job:
    job = find_job(store, job_id, caller)
    dead_children = _children_in(store, job, JobStatus.DEAD)
    if job.status in (JobStatus.DONE, JobStatus.DEAD) and dead_children:
        return _retry_children(store, queue, job, dead_children)
    if job.status is not JobStatus.DEAD:
        raise NotRetryableError(f"job {job_id} is {job.status.value}; only a dead job can be retried")
    parent = store.get(job.parent_id) if job.parent_id else None
    try:
        retried = store.reopen(job, parent, PARENT_RECHECK_SECONDS)
    except JobMovedError:
        raise _moved(store, job_id, NotRetryableError, "retried") from None
    _announce(queue, retried, JobStatus.DEAD)
    return retried


def _retry_children(store: JobStore, queue: JobQueue, parent: Job, children: list[Job]) -> Job:
    seen = parent
    for child in children:
        try:
            store.reopen(child, seen, PARENT_RECHECK_SECONDS)
        except JobMovedError:
            if seen is parent:
                raise _moved(store, parent.job_id, NotRetryableError, "retried") from None
            logger.info("a dead child moved before its retry; left as it is", childId=child.job_id)
            continue
        _announce(queue, child, JobStatus.DEAD)
        if seen is parent:
            log_transition(parent.job_id, parent.job_type, parent.status, JobStatus.WAITING, parent.attempts)
            seen = store.get(parent.job_id) or parent
    return store.get(parent.job_id) or seen


def _announce(queue: JobQueue, job: Job, previous: JobStatus) -> None:
    log_transition(job.job_id, job.job_type, previous, JobStatus.PENDING, 0, "retried by a caller")
    try:
        queue.send(job.job_id)
    except Exception:
        logger.exception(
            "SendMessage failed after a retry; the recovery sweep will send it", jobId=job.job_id
        )


def cancel_job(store: JobStore, caller: Caller, job_id: str) -> Job:
    job = find_job(store, job_id, caller)
    if job.status is JobStatus.WAITING:
        for child in _children_in(store, job, JobStatus.PENDING):
            _cancel_one(store, child, store.get(job.job_id), quiet=True)
        return _cancel_one(store, job, None)
    if job.status is not JobStatus.PENDING:
        raise NotCancellableError(
            f"job {job_id} is {job.status.value}; only a pending job or a waiting fan-out can be cancelled"
        )
    parent = store.get(job.parent_id) if job.parent_id else None
    return _cancel_one(store, job, parent)


def _cancel_one(store: JobStore, job: Job, parent: Job | None, quiet: bool = False) -> Job:
    try:
        cancelled = store.cancel(job, parent)
    except JobMovedError:
        if quiet:  # a child claimed meanwhile runs on; the parent is cancelled all the same
            return job
        raise _moved(store, job.job_id, NotCancellableError, "cancelled") from None
    log_transition(job.job_id, job.job_type, job.status, JobStatus.CANCELLED, job.attempts)
    return cancelled


def _children_in(store: JobStore, parent: Job, status: JobStatus) -> list[Job]:
    if parent.children is None:
        return []
    return [child for child in store.get_many(child_ids(parent)) if child.status is status]


def _moved(store: JobStore, job_id: str, error: type[Exception], verb: str) -> Exception:
    now = store.get(job_id)
    status = now.status.value if now else "gone"
    return error(f"job {job_id} changed while it was being {verb}; it is {status} now")
