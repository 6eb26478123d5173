"""A caller's acts on a running workflow: send it an event, cancel it.

An event completes the callback of the workflow's current `wait_for_event` for that name; a job that
does not wait for it now (another name, not waiting, finished, a plain job) refuses it (NotWaitingError),
so an event is never kept for a wait that has not begun. Another client's job is not found.

A cancel writes `cancelled` first, fenced on the job still running its execution: from then on every
write of the execution fails its condition, so no later step runs even if the stop below is lost; then
the execution is stopped, so a sleeping or waiting one does not wake to find out.
"""

import json
from typing import Any

from lambdas.lifecycle.errors import NotWaitingError
from lambdas.lifecycle.requests.reads import find_job
from lambdas.lifecycle.workflows.engine import CallbackGoneError, Engine
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.jobs import JobStore


def send_event(store: JobStore, engine: Engine, caller: Caller, job_id: str, name: str, data: Any) -> None:
    job = find_job(store, job_id, caller)
    callback = store.workflows().event_callback(job.job_id, name)
    if callback is None:
        raise NotWaitingError(f"job {job_id} is {job.status.value}, not waiting for event {name!r}")
    try:
        engine.complete(callback, json.dumps(data).encode())
    except CallbackGoneError:
        raise NotWaitingError(f"job {job_id}'s wait for event {name!r} is over") from None
    logger.info("event sent", jobId=job.job_id, event=name)


def is_running_workflow(job: Job) -> bool:
    return job.execution is not None and job.status in (JobStatus.PROCESSING, JobStatus.WAITING)


def cancel_workflow(store: JobStore, engine: Engine, job: Job) -> Job:
    """JobMovedError when the workflow ended (or was cancelled) meanwhile."""
    workflows = store.workflows()
    cancelled = workflows.cancel(job)
    log_transition(job.job_id, job.job_type, job.status, JobStatus.CANCELLED, job.attempts)
    arn = workflows.execution_arn(job.job_id)
    if arn:
        try:
            engine.stop(arn, "cancelled by a caller")
        except Exception:  # the job is cancelled already: the execution ends at its next write
            logger.exception("the cancelled workflow's execution could not be stopped", jobId=job.job_id)
    return cancelled
