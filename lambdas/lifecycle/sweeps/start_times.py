"""Jobs that start later: their start time, handing a `scheduled` job to SQS, and moving a start time.

- A job asked to start within the horizon (SQS's longest message delay, 900 s) is `pending` and its
  message is sent with the delay left. One due later is `scheduled`: it has no message yet. So is a
  failed job whose retry waits longer than that (lambdas/lifecycle/attempt/worker.py, `_retry`).
- `hand_over_due` (run by every recovery sweep, which comes far more often than the horizon) makes each
  `scheduled` job due within the horizon `pending` and sends its message with the delay left, so the
  job starts at its start time, not on the sweep's grid. If the send fails, the job is `pending` and due,
  and the lost-message sweep sends it.
- A caller moves a start time with `lambdas/lifecycle/requests/reschedule.py`: a message sent for the
  old time that comes early cannot claim the job (the claim checks `runAt`); the worker makes it
  visible again when the job is due.
"""

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from lambdas import config
from lambdas.lifecycle.errors import InvalidStartTimeError
from lambdas.models.job import Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

if TYPE_CHECKING:  # the recovery function loads this module; pydantic and the api's models stay out
    from datetime import datetime


def delay_until(run_at: "datetime | None", delay_seconds: float, now: float) -> float:
    """Seconds from `now` to the start time asked for (0 for a time past); InvalidStartTimeError beyond
    a year."""
    delay = max(run_at.timestamp() - now, 0.0) if run_at is not None else float(delay_seconds)
    if delay > config.MAX_SCHEDULE_AHEAD_SECONDS:
        raise InvalidStartTimeError(
            f"a job may start at most {config.MAX_SCHEDULE_AHEAD_SECONDS} s (a year) ahead; this is {delay:.0f} s"
        )
    return delay


def message_delay(job: Job, now: float) -> int:
    """The SQS delay of a pending job's message: what is left until its start time, whole seconds."""
    return min(max(math.ceil(job.due_at / 1000 - now), 0), config.MAX_DELAY_SECONDS)


def send_if_pending(queue: JobQueue, job: Job, now: float) -> None:
    """Send a `pending` job's message with the delay left; a `scheduled` one gets its message later."""
    if job.status is JobStatus.PENDING:
        queue.send_job(job, message_delay(job, now))


def hand_over_due(
    store: JobStore, queue: JobQueue, horizon_seconds: int, has_time: Callable[[], bool]
) -> int:
    """Every `scheduled` job due within the horizon to `pending`, its message sent; how many were."""
    now = store.now()
    handed = 0
    for job in store.by_status(JobStatus.SCHEDULED, due_before=now + horizon_seconds):
        if not has_time():
            break
        pending = store.hand_over(job)
        if pending is None:
            continue  # another sweep handed it over, or a caller moved or cancelled it
        log_transition(
            job.job_id, job.job_type, JobStatus.SCHEDULED, JobStatus.PENDING, job.attempts, "due soon"
        )
        try:
            send_if_pending(queue, pending, store.now())
        except Exception:
            logger.exception("SendMessage failed for a job due soon; the lost-message sweep sends it")
        handed += 1
    return handed
