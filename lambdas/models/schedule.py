"""A recurring schedule as the lifecycle sees it: when it fires, and the job each firing creates."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lambdas.models.job import Priority

NEXT_SHOWN = 5  # the firings a schedule's view lists ahead


class Overlap(StrEnum):
    ALLOW = "allow"  # every firing creates its job
    SKIP = "skip"  # a firing creates none while the schedule's previous job is not finished


class ScheduleState(StrEnum):
    ENABLED = "enabled"
    PAUSED = "paused"


@dataclass(frozen=True)
class Firing:
    """One job a firing created: its id and the time the firing was for (epoch ms)."""

    job_id: str
    scheduled_for: int


@dataclass(frozen=True)
class ScheduleTiming:
    """What the tick holds of a schedule to know whether it is due: never its job's payload."""

    owner: str
    schedule_id: str
    expression: str
    time_zone: str
    state: ScheduleState
    start_at: int  # epoch ms: a rate's first firing


@dataclass(frozen=True)
class Schedule:
    schedule_id: str
    owner: str
    name: str
    expression: str
    time_zone: str
    job_type: str
    payload: dict[str, Any]
    max_attempts: int
    overlap: Overlap
    state: ScheduleState
    created_at: str
    start_at: int  # epoch ms: a rate's first firing
    version: int = 1
    recent: tuple[Firing, ...] = ()  # newest first
    # Why its last firing failed or was skipped (None once one fires again), and when (ISO time).
    last_error: str | None = None
    last_error_at: str | None = None
    priority: Priority = Priority.NORMAL  # its jobs'
