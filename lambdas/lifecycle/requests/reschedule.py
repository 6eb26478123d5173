"""A caller moves the start time of a job that has not started (`POST /jobs/{jobId}/reschedule`).

The move is conditioned on the start time seen: a hand-over to SQS or a claim that gets there first
makes it fail (409), never a double effect. Within the horizon the job is `pending` and its message is
sent with the delay left; beyond it the job is `scheduled` (`lambdas/lifecycle/sweeps/start_times.py`).
"""

from datetime import datetime

from lambdas.lifecycle.errors import NotReschedulableError
from lambdas.lifecycle.requests.reads import find_job
from lambdas.lifecycle.sweeps.start_times import delay_until, send_if_pending
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.errors import JobMovedError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue


def reschedule_job(
    store: JobStore, queue: JobQueue, caller: Caller, job_id: str, run_at: datetime, horizon_seconds: int
) -> Job:
    """Move the start time of a job that has not started."""
    job = find_job(store, job_id, caller)
    if not (job.status is JobStatus.SCHEDULED or (job.status is JobStatus.PENDING and job.run_at)):
        raise NotReschedulableError(
            f"job {job_id} is {job.status.value}; only a job that has not started "
            "(scheduled, or pending with a start time) can be rescheduled"
        )
    now = store.now()
    start = now + delay_until(run_at, 0, now)
    try:
        moved = store.move_start(job, start, horizon_seconds)
    except JobMovedError:
        current = store.get(job_id)
        status = current.status.value if current else "gone"
        raise NotReschedulableError(
            f"job {job_id} changed while it was being rescheduled; it is {status} now"
        ) from None
    if moved.status is not job.status:
        log_transition(job.job_id, job.job_type, job.status, moved.status, 0, "rescheduled")
    try:
        send_if_pending(queue, moved, store.now())
    except Exception:
        logger.exception("SendMessage failed after a reschedule; the lost-message sweep sends it")
    return moved
