"""Recurring schedules: write them (their expression and their job checked as EventBridge Scheduler and
POST /jobs would), read them with their next fire times and last jobs, and fire them.

Exactly one job per firing: the job's id derives from (owner, schedule, the time the firing is for), and
the job is a conditional put, so a firing delivered twice, or retried after a timeout, finds the job the
first delivery made and creates no second one. With overlap `skip`, a firing creates nothing while the
schedule's last job is not finished. A paused or deleted schedule's firing creates nothing.

A schedule fails alone: whatever goes wrong with one schedule at a tick (its fire times, its item, its
owner over the day's cap of firings) is recorded on it (`lastError`) and the tick goes on to the next.
Only the table or the queue failing fails the tick, which EventBridge Scheduler then retries whole (the
firings it made already are found made).
"""

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas import config
from lambdas.lifecycle.errors import (
    ForbiddenError,
    InvalidCursorError,
    InvalidScheduleError,
    ScheduleLimitError,
    ScheduleNotFoundError,
)
from lambdas.lifecycle.requests import paging
from lambdas.lifecycle.sweeps.start_times import send_if_pending
from lambdas.models import schedule_expressions as expressions
from lambdas.models.caller import Caller
from lambdas.models.job import Job, JobStatus, NewJob
from lambdas.models.schedule import NEXT_SHOWN, Firing, Overlap, Schedule, ScheduleState, ScheduleTiming
from lambdas.models.timestamps import iso_time
from lambdas.observability import log_transition, logger
from lambdas.store.codec import compact_json
from lambdas.store.errors import JobExistsError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.schedules import (
    DAY_KEPT_SECONDS,
    FiringCapReachedError,
    ScheduleChangedError,
    ScheduleLimitReachedError,
    ScheduleStore,
)

if TYPE_CHECKING:
    # The API's models: the schedules function, which only fires schedules, never loads them.
    from lambdas.models.schedule_api import (
        CreateScheduleRequest,
        ScheduledJob,
        SchedulePage,
        ScheduleView,
        UpdateScheduleRequest,
    )

# A firing's job id: uuid5 of (owner, schedule id, the firing's time in epoch ms) in this namespace.
_FIRING_NAMESPACE = uuid.UUID("0b9c3f1e-2a57-4d8e-9f61-3c7a5e2d4b18")


class FireOutcome(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"  # this firing's job exists already: a repeated delivery
    SKIPPED = "skipped"  # overlap skip: the last job is not finished
    OVER_CAP = "over_cap"  # its owner's firings created as many jobs today as they may
    IDLE = "idle"  # paused, or no such schedule any more
    FAILED = "failed"  # this schedule's own failure, recorded on it


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


def next_fire_times(
    schedule: Schedule | ScheduleTiming, after: float, count: int = NEXT_SHOWN
) -> list[datetime]:
    parsed = expressions.parse(schedule.expression)
    start = datetime.fromtimestamp(schedule.start_at / 1000, UTC)
    return expressions.next_fire_times(
        parsed, schedule.time_zone, datetime.fromtimestamp(after, UTC), start, count
    )


def _checked_job(job: "ScheduledJob", owner: str) -> dict[str, object]:
    """The job's payload as POST /jobs would store it for its owner (its type's checks included)."""
    from lambdas.lifecycle.requests.submit import validated_payload  # the one check POST /jobs makes
    from lambdas.models.api import SubmitJobRequest

    request = SubmitJobRequest(type=job.type, payload=job.payload, max_attempts=job.max_attempts)
    payload = validated_payload(request, owner)
    size = len(compact_json(payload).encode("utf-8", "surrogatepass"))
    if size > config.MAX_SCHEDULE_PAYLOAD_BYTES:
        raise InvalidScheduleError(
            f"a schedule's job payload is at most {config.MAX_SCHEDULE_PAYLOAD_BYTES} bytes as JSON, "
            f"this one {size}; a larger input belongs in an upload the payload names"
        )
    return payload


def _attempts(job: "ScheduledJob", retry_policies: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Its jobs' `maxAttempts` as POST /jobs resolves one: those asked for, else the type's policy's."""
    # The schedules function's tick loads this module and never creates a schedule; submit would add
    # the job-type registry, the API's models and the limiter to its cold start (73 modules, ~90 ms here).
    from lambdas.lifecycle.requests.submit import max_attempts

    asked = job.max_attempts if "max_attempts" in job.model_fields_set else None
    return max_attempts(job.type, asked, retry_policies or {})


def create_schedule(
    schedules: ScheduleStore,
    caller: Caller,
    request: "CreateScheduleRequest",
    cap: int,
    retry_policies: Mapping[str, Mapping[str, Any]] | None = None,
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
        max_attempts=_attempts(request.job, retry_policies),
        priority=request.job.priority,
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


def owner_of(caller: Caller, client: str | None) -> str:
    """Whose schedules a caller names: its own; the operator may name any client's (`?client=`)."""
    if not caller.names(client):
        raise ForbiddenError("a client's key reaches its own schedules only")
    return client or caller.owner


def find_schedule(
    schedules: ScheduleStore, caller: Caller, schedule_id: str, client: str | None = None
) -> Schedule:
    found = schedules.get(owner_of(caller, client), schedule_id)
    if found is None:
        raise ScheduleNotFoundError(f"no schedule {schedule_id}")
    return found


def list_schedules(
    schedules: ScheduleStore,
    store: JobStore,
    caller: Caller,
    client: str | None,
    limit: int,
    cursor: str | None,
) -> "SchedulePage":
    """A page of a client's schedules; the operator's without `client` is every client's, failing first
    within the page."""
    from lambdas.models.schedule_api import SchedulePage  # the API's: the firing function never loads them

    owner = None if caller.operator and client is None else owner_of(caller, client)
    tag = paging.query_tag("schedules", owner)
    start = _start_key(paging.decode(tag, cursor))
    if start is not None and owner is not None and start[0] != owner:
        # DynamoDB refuses a Query's start key of another partition (a 500); the tag alone is no secret.
        raise InvalidCursorError("the cursor belongs to another list or query")
    found, after = schedules.page(owner, limit, start)
    found.sort(key=lambda schedule: schedule.last_error is None)
    views = [view(schedules, store, schedule) for schedule in found]
    return SchedulePage(
        schedules=views, next_cursor=None if after is None else paging.encode(tag, list(after))
    )


def _start_key(state: object) -> tuple[str, str] | None:
    if state is None:
        return None
    if not (
        isinstance(state, list)
        and len(state) == 2
        and all(isinstance(part, str) and 0 < len(part) <= 256 for part in state)
    ):
        raise InvalidCursorError("the cursor is malformed")
    return state[0], state[1]


def update_schedule(
    schedules: ScheduleStore,
    caller: Caller,
    schedule_id: str,
    request: "UpdateScheduleRequest",
    client: str | None = None,
    retry_policies: Mapping[str, Mapping[str, Any]] | None = None,
) -> Schedule:
    seen = find_schedule(schedules, caller, schedule_id, client)
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
            payload=_checked_job(request.job, seen.owner),
            max_attempts=_attempts(request.job, retry_policies),
            priority=request.job.priority,
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


def delete_schedule(
    schedules: ScheduleStore, caller: Caller, schedule_id: str, client: str | None = None
) -> Schedule:
    seen = find_schedule(schedules, caller, schedule_id, client)
    try:
        schedules.delete(seen)
    except ScheduleChangedError:
        raise ScheduleNotFoundError(f"no schedule {schedule_id}") from None
    return seen


def view(
    schedules: ScheduleStore, store: JobStore, schedule: Schedule, upcoming: bool = True
) -> "ScheduleView":
    """The schedule with its next fire times (none while paused, or without `upcoming`) and last jobs."""
    from lambdas.models.schedule_api import (  # as SchedulePage above: the API's only
        ScheduleFiring,
        ScheduleView,
    )

    shown = upcoming and schedule.state is ScheduleState.ENABLED
    try:
        times = next_fire_times(schedule, schedules.now()) if shown else []
    except expressions.InvalidExpressionError:
        times = []  # a schedule stored under older rules: its `lastError` says why it does not fire
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
    schedules: ScheduleStore, store: JobStore, queue: JobQueue, after: float, until: float, cap: int
) -> Counter[FireOutcome]:
    """Every enabled schedule's firings in (`after`, `until`], each once: the deployed stack's minute
    tick covers the minute before its own scheduled time (a retried tick covers the same minute, and
    makes no second job). How many firings ended how.

    The tick holds one page of schedules' timings and one schedule at a time, never the jobs it made.
    A schedule created within the last window looks back one window more, to its start at the earliest:
    one created just before a tick, whose write the tick's read did not see yet, still fires at its start
    (the next tick finds its start's job made, if the first did see it)."""
    outcomes: Counter[FireOutcome] = Counter()
    window = until - after
    for timing in schedules.timings():
        if timing.state is not ScheduleState.ENABLED:
            continue
        try:
            since = after
            if timing.start_at / 1000 > after - window:
                since = min(after, max(after - window, timing.start_at / 1000 - 0.001))
            due = [t for t in next_fire_times(timing, since, TICK_FIRINGS) if t.timestamp() <= until]
            schedule = schedules.get(timing.owner, timing.schedule_id) if due else None
            for moment in due:
                fired = fire(schedules, store, queue, schedule, int(moment.timestamp()) * 1000, cap=cap)
                outcomes[fired.outcome] += 1
        except (BotoCoreError, ClientError):
            raise  # the table or the queue: the tick fails and is retried whole
        except Exception as error:  # anything else is this one schedule's, recorded on it
            outcomes[FireOutcome.FAILED] += 1
            logger.exception("schedule failed", scheduleId=timing.schedule_id, owner=timing.owner)
            message = f"{type(error).__name__}: {error}"
            schedules.record_error(timing.owner, timing.schedule_id, message, iso_time(schedules.now()))
    return outcomes


# At most this many firings of one schedule per tick (a minute holds one per cron minute, one per rate).
TICK_FIRINGS = 60


def fire(
    schedules: ScheduleStore,
    store: JobStore,
    queue: JobQueue,
    schedule: Schedule | None,
    scheduled_for: int,
    now_run: bool = False,
    cap: int | None = None,
) -> Fired:
    """Create the job of the firing for `scheduled_for` (epoch ms), once. `now_run`: a caller's "run
    now", which fires a paused schedule too (and counts as the request it is, not as a firing). `cap`:
    the jobs its owner's firings may create in the day; a firing past it creates none and says so on the
    schedule."""
    if schedule is None or (schedule.state is ScheduleState.PAUSED and not now_run):
        return Fired(FireOutcome.IDLE)
    job_id = firing_job_id(schedule, scheduled_for)
    if schedule.overlap is Overlap.SKIP and schedule.recent and schedule.recent[0].job_id != job_id:
        last = store.get(schedule.recent[0].job_id, counts=False)
        if last is not None and not last.status.finished:
            logger.info("firing skipped: the last job is not finished", scheduleId=schedule.schedule_id)
            return Fired(FireOutcome.SKIPPED, last)
    if cap is not None and all(f.job_id != job_id for f in schedule.recent):
        try:
            _count_firing(schedules, schedule, scheduled_for, cap)
        except FiringCapReachedError:
            logger.info("firing skipped: over the day's cap", scheduleId=schedule.schedule_id)
            return Fired(FireOutcome.OVER_CAP)
    new = NewJob(
        job_id=job_id,
        job_type=schedule.job_type,
        payload=schedule.payload,
        max_attempts=schedule.max_attempts,
        owner=schedule.owner,
        priority=schedule.priority,
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


def _count_firing(schedules: ScheduleStore, schedule: Schedule, scheduled_for: int, cap: int) -> None:
    """Count the firing against its owner's day (UTC); past the cap, record the skip on the schedule."""
    day = datetime.fromtimestamp(scheduled_for / 1000, UTC)
    expires_at = int(scheduled_for / 1000) + DAY_KEPT_SECONDS
    try:
        schedules.count_firing(schedule.owner, day.date().isoformat(), cap, expires_at)
    except FiringCapReachedError:
        message = (
            f"firing of {iso_time(scheduled_for / 1000)} skipped: this key's schedules created "
            f"{cap} jobs on {day.date().isoformat()} (UTC), as many as they may a day"
        )
        schedules.record_error(schedule.owner, schedule.schedule_id, message, iso_time(schedules.now()))
        raise
