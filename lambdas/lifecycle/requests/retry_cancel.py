"""What a caller may do to a job: retry it, cancel it. Each is one conditional write per job (with its
fan-out's counters in the same transaction), conditioned on the state the caller saw, so a second
concurrent call gets 409 and never a double effect.

- retry: a `dead` job goes back to `pending` with a fresh attempt budget, then its message is sent
  (if SendMessage fails the job is still `pending` and due, and the recovery sweep sends it). A fan-out
  parent (`done` or `dead`) with dead children: each dead child is retried that way, on the parent's
  current state, the first one moving the parent back to `waiting` (`fan_out`).
- cancel: a `pending` (or `scheduled`) job becomes `cancelled` (a message that arrives later cannot claim it: claims
  take only `pending` or an expired `processing`). A `waiting` fan-out: its pending children are
  cancelled one by one, then the parent.

A fan-out of more than `fan_out.INLINE_CHILDREN` children is retried or cancelled by an ops job: the
answer is `Deferred`, the ops job (`fan_out`).
"""

from lambdas.lifecycle.attempt.parents import child_ids
from lambdas.lifecycle.errors import NotCancellableError, NotRetryableError
from lambdas.lifecycle.ops_jobs import fan_out
from lambdas.lifecycle.ops_jobs.fan_out import Deferred
from lambdas.lifecycle.ops_jobs.job import ActionCounts
from lambdas.lifecycle.requests.reads import find_job
from lambdas.lifecycle.workflows.engine import Engine, LambdaEngine
from lambdas.lifecycle.workflows.events import cancel_workflow
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobAction, JobStatus
from lambdas.observability import log_transition
from lambdas.store.errors import JobMovedError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

__all__ = ["Deferred", "allowed_actions", "cancel_job", "retry_job"]


def allowed_actions(job: Job) -> list[JobAction]:
    """What a caller may do to `job` as it is now: the rule `retry_job` and `cancel_job` apply, sent in
    the job's API view (`allowedActions`) so the console offers exactly these (the write checks again)."""
    allowed = []
    if _retries_children(job) or job.status is JobStatus.DEAD:
        allowed.append(JobAction.RETRY)
    running_workflow = job.execution is not None and job.status is JobStatus.PROCESSING
    if job.status in (JobStatus.PENDING, JobStatus.SCHEDULED, JobStatus.WAITING) or running_workflow:
        allowed.append(JobAction.CANCEL)
    return allowed


def _retries_children(job: Job) -> bool:
    """A finished fan-out with dead children: a retry is of those children."""
    return (
        job.children is not None and job.status in (JobStatus.DONE, JobStatus.DEAD) and job.children.dead > 0
    )


def retry_job(store: JobStore, queue: JobQueue, caller: Caller, job_id: str) -> Job | Deferred:
    job = find_job(store, job_id, caller)
    if _retries_children(job):
        return _on_children(store, queue, job, JobAction.RETRY, NotRetryableError, "retried")
    if JobAction.RETRY not in allowed_actions(job):
        raise NotRetryableError(f"job {job_id} is {job.status.value}; only a dead job can be retried")
    if job.parent_id:
        parent = store.get(job.parent_id)
        try:
            retried, _ = fan_out.retry_child(store, queue, parent, job) if parent else (False, None)
        except JobMovedError:
            retried = False
        if not retried:
            raise _moved(store, job_id, NotRetryableError, "retried")
        return store.get(job_id) or job
    try:
        reopened = store.reopen(job, None, fan_out.PARENT_RECHECK_SECONDS)
    except JobMovedError:
        raise _moved(store, job_id, NotRetryableError, "retried") from None
    fan_out.announce(queue, reopened)
    return reopened


def cancel_job(
    store: JobStore,
    caller: Caller,
    job_id: str,
    queue: JobQueue | None = None,
    engine: "Engine | None" = None,
) -> Job | Deferred:
    """Cancel a pending job, a running workflow (`lambdas/lifecycle/workflows/events.py`: stopped by `engine`), or
    a waiting fan-out: a large one by an ops job when there is a `queue` to send it on, else in this call."""
    job = find_job(store, job_id, caller)
    if job.execution is not None and job.status in (JobStatus.PROCESSING, JobStatus.WAITING):
        try:
            return cancel_workflow(store, engine or _lambda_engine(), job)
        except JobMovedError:
            raise _moved(store, job.job_id, NotCancellableError, "cancelled") from None
    if job.status is JobStatus.WAITING:
        if queue is not None and _large(job):
            return Deferred(fan_out.start_ops_job(store, queue, job, JobAction.CANCEL))
        fan_out.act_on_page(store, queue, JobAction.CANCEL, job, child_ids(job), ActionCounts())
        return _cancel_one(store, job, None)
    if JobAction.CANCEL not in allowed_actions(job):
        raise NotCancellableError(
            f"job {job_id} is {job.status.value}; only a pending or scheduled job or a waiting fan-out "
            "can be cancelled"
        )
    parent = store.get(job.parent_id) if job.parent_id else None
    return _cancel_one(store, job, parent)


def _lambda_engine() -> Engine:
    return LambdaEngine()


def _on_children(
    store: JobStore, queue: JobQueue, parent: Job, action: JobAction, error: type[Exception], verb: str
) -> Job | Deferred:
    if _large(parent):
        return Deferred(fan_out.start_ops_job(store, queue, parent, action))
    counts = ActionCounts()
    fan_out.act_on_page(store, queue, action, parent, child_ids(parent), counts)
    if not counts.applied:
        raise _moved(store, parent.job_id, error, verb)
    return store.get(parent.job_id) or parent


def _large(parent: Job) -> bool:
    return parent.children is not None and parent.children.total > fan_out.INLINE_CHILDREN


def _cancel_one(store: JobStore, job: Job, parent: Job | None) -> Job:
    try:
        cancelled = store.cancel(job, parent)
    except JobMovedError:
        raise _moved(store, job.job_id, NotCancellableError, "cancelled") from None
    log_transition(job.job_id, job.job_type, job.status, JobStatus.CANCELLED, job.attempts)
    return cancelled


def _moved(store: JobStore, job_id: str, error: type[Exception], verb: str) -> Exception:
    now = store.get(job_id)
    status = now.status.value if now else "gone"
    return error(f"job {job_id} changed while it was being {verb}; it is {status} now")
