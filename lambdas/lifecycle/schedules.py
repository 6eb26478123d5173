"""Recurring schedules: write them (their expression and their job checked as EventBridge Scheduler and
POST /jobs would), read them with their next fire times and last jobs, and fire them.

Exactly one job per firing: the job's id derives from (owner, schedule, the time the firing is for), and
the job is a conditional put, so a firing delivered twice, or retried after a timeout, finds the job the
first delivery made and creates no second one. With overlap `skip`, a firing creates nothing while the
schedule's last job is not finished. A paused or deleted schedule's firing creates nothing.
"""

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from lambdas.lifecycle.errors import InvalidScheduleError, ScheduleLimitError, ScheduleNotFoundError
from lambdas.lifecycle.start_times import send_if_pending
from lambdas.models import schedule_expressions as expressions
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.models.schedule import NEXT_SHOWN, Firing, Overlap, Schedule, ScheduleState
from lambdas.models.timestamps import iso_time
from lambdas.observability import log_transition, logger
from lambdas.store.errors import JobExistsError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import ScheduleChangedError, ScheduleLimitReachedError, ScheduleStore

if TYPE_CHECKING:
    # The API's models: the schedules function, which only fires schedules, never loads them.
    from lambdas.models.schedule_api import (
        CreateScheduleRequest,
        ScheduledJob,
        ScheduleView,
        UpdateScheduleRequest,
    )

# A firing's job id: uuid5 of (owner, schedule id, the firing's time in epoch ms) in this namespace.
_FIRING_NAMESPACE = uuid.UUID("0b9c3f1e-2a57-4d8e-9f61-3c7a5e2d4b18")


class FireOutcome(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"  # this firing's job exists already: a repeated delivery
    SKIPPED = "skipped"  # overlap skip: the last job is not finished
    IDLE = "idle"  # paused, or no such schedule any more


@dataclass(frozen=True)
class Fired:
    outcome: FireOutcome
    job: Job | None = None


def firing_job_id(schedule: Schedule, scheduled_for: int) -> str:
    return str(uuid.uuid5(_FIRING_NAMESPACE, f"{schedule.owner}\n{schedule.schedule_id}\n{scheduled_for}"))


def check_expression(expression: str, time_zone: str, now: float) -> None:
    """InvalidScheduleError saying why, for what EventBridge would refuse or what never fires."""
    try:
        parsed = expressions.parse(expression)
        expressions.zone(time_zone)
    except expressions.InvalidExpressionError as refused:
        raise InvalidScheduleError(str(refused)) from None
    moment = datetime.fromtimestamp(now, UTC)
    if not expressions.next_fire_times(parsed, time_zone, moment, moment, 1):
        raise InvalidScheduleError(f"{expression} never fires after now")


def next_fire_times(schedule: Schedule, after: float, count: int = NEXT_SHOWN) -> list[datetime]:
    parsed = expressions.parse(schedule.expression)
    start = datetime.fromtimestamp(schedule.start_at / 1000, UTC)
    return expressions.next_fire_times(
        parsed, schedule.time_zone, datetime.fromtimestamp(after, UTC), start, count
    )


def _checked_job(job: "ScheduledJob", owner: str) -> dict[str, object]:
    """The job's payload as POST /jobs would store it for its owner (its type's checks included)."""
    from lambdas.lifecycle.submit import validated_payload  # the one check POST /jobs makes
    from lambdas.models.api import SubmitJobRequest

    request = SubmitJobRequest(type=job.type, payload=job.payload, max_attempts=job.max_attempts)
    return validated_payload(request, owner)


def create_schedule(
    schedules: ScheduleStore, caller: Caller, request: "CreateScheduleRequest", cap: int
) -> Schedule:
    now = schedules.now()
    check_expression(request.expression, request.time_zone, now)
    schedule = Schedule(
        schedule_id=str(uuid.uuid4()),
        owner=caller.owner,
        name=request.name,
        expression=request.expression,
        time_zone=request.time_zone,
        job_type=request.job.type,
        payload=_checked_job(request.job, caller.owner),
        max_attempts=request.job.max_attempts,
        overlap=request.overlap,
        state=request.state,
        created_at=iso_time(now),
        start_at=int(now * 1000),
    )
    try:
        schedules.create(schedule, cap)
    except ScheduleLimitReachedError:
        raise ScheduleLimitError(f"this key keeps {cap} schedules already, as many as it may") from None
    return schedule


def find_schedule(schedules: ScheduleStore, caller: Caller, schedule_id: str) -> Schedule:
    found = schedules.get(caller.owner, schedule_id)
    if found is None:
        raise ScheduleNotFoundError(f"no schedule {schedule_id}")
    return found


def update_schedule(
    schedules: ScheduleStore, caller: Caller, schedule_id: str, request: "UpdateScheduleRequest"
) -> Schedule:
    seen = find_schedule(schedules, caller, schedule_id)
    changed = replace(
        seen,
        name=request.name or seen.name,
        expression=request.expression or seen.expression,
        time_zone=request.time_zone or seen.time_zone,
        overlap=request.overlap or seen.overlap,
        state=request.state or seen.state,
    )
    if request.job is not None:
        changed = replace(
            changed,
            job_type=request.job.type,
            payload=_checked_job(request.job, caller.owner),
            max_attempts=request.job.max_attempts,
        )
    if (changed.expression, changed.time_zone) != (seen.expression, seen.time_zone):
        check_expression(changed.expression, changed.time_zone, schedules.now())
        changed = replace(changed, start_at=int(schedules.now() * 1000))  # a new rate counts from now
    try:
        return schedules.replace(seen, changed)
    except ScheduleChangedError:
        raise InvalidScheduleError(
            f"schedule {schedule_id} changed meanwhile; read it and try again"
        ) from None


def delete_schedule(schedules: ScheduleStore, caller: Caller, schedule_id: str) -> Schedule:
    seen = find_schedule(schedules, caller, schedule_id)
    try:
        schedules.delete(seen)
    except ScheduleChangedError:
        raise ScheduleNotFoundError(f"no schedule {schedule_id}") from None
    return seen


def view(
    schedules: ScheduleStore, store: JobStore, schedule: Schedule, upcoming: bool = True
) -> "ScheduleView":
    """The schedule with its next fire times (none while paused, or without `upcoming`) and last jobs."""
    from lambdas.models.schedule_api import ScheduleFiring, ScheduleView

    shown = upcoming and schedule.state is ScheduleState.ENABLED
    times = next_fire_times(schedule, schedules.now()) if shown else []
    jobs = {job.job_id: job for job in store.get_many([f.job_id for f in schedule.recent])}
    last = [
        ScheduleFiring(
            job_id=f.job_id,
            scheduled_for=iso_time(f.scheduled_for / 1000),
            status=jobs[f.job_id].status.value if f.job_id in jobs else None,
        )
        for f in schedule.recent
    ]
    return ScheduleView.of(schedule, [iso_time(t.timestamp()) for t in times], last)


def fire_due(
    schedules: ScheduleStore, store: JobStore, queue: JobQueue, after: float, until: float
) -> list[Fired]:
    """Every enabled schedule's firings in (`after`, `until`], each once: the deployed stack's minute
    tick covers the minute before its own scheduled time (a retried tick covers the same minute, and
    makes no second job).

    A schedule that has never fired looks back one window more, to its start at the earliest: one created
    just before a tick, whose write the tick's read did not see yet, still fires at its start."""
    fired = []
    for schedule in schedules.all():
        if schedule.state is not ScheduleState.ENABLED:
            continue
        since = after
        if not schedule.recent:
            since = min(after, max(after - (until - after), schedule.start_at / 1000 - 0.001))
        for moment in next_fire_times(schedule, since, TICK_FIRINGS):
            if moment.timestamp() > until:
                break
            fired.append(fire(schedules, store, queue, schedule, int(moment.timestamp()) * 1000))
    return fired


# At most this many firings of one schedule per tick (a minute holds one per cron minute, one per rate).
TICK_FIRINGS = 60


def fire(
    schedules: ScheduleStore,
    store: JobStore,
    queue: JobQueue,
    schedule: Schedule | None,
    scheduled_for: int,
    now_run: bool = False,
) -> Fired:
    """Create the job of the firing for `scheduled_for` (epoch ms), once. `now_run`: a caller's "run
    now", which fires a paused schedule too."""
    if schedule is None or (schedule.state is ScheduleState.PAUSED and not now_run):
        return Fired(FireOutcome.IDLE)
    job_id = firing_job_id(schedule, scheduled_for)
    if schedule.overlap is Overlap.SKIP and schedule.recent and schedule.recent[0].job_id != job_id:
        last = store.get(schedule.recent[0].job_id, counts=False)
        if last is not None and not last.status.finished:
            logger.info("firing skipped: the last job is not finished", scheduleId=schedule.schedule_id)
            return Fired(FireOutcome.SKIPPED, last)
    new = NewJob(
        job_id=job_id,
        job_type=schedule.job_type,
        payload=schedule.payload,
        max_attempts=schedule.max_attempts,
        owner=schedule.owner,
    )
    try:
        job = store.put_new(new)
        outcome = FireOutcome.CREATED
        log_transition(job.job_id, job.job_type, "new", job.status, 0, f"schedule {schedule.schedule_id}")
    except JobExistsError as exists:
        job, outcome = exists.existing, FireOutcome.DUPLICATE
    schedules.record_firing(schedule, Firing(job.job_id, scheduled_for))
    if job.status is JobStatus.PENDING and job.attempts == 0:
        # A repeated delivery sends again too: its first may have failed after the put (a duplicate
        # message is dropped by the claim).
        send_if_pending(queue, job, store.now())
    return Fired(outcome, job)
