"""The /schedules routes' request and response bodies (camelCase on the wire)."""

from typing import Any, Self

from pydantic import Field

from lambdas import config
from lambdas.models.api import PRIORITY_DESCRIPTION
from lambdas.models.job import Priority
from lambdas.models.schedule import NEXT_SHOWN, Overlap, Schedule, ScheduleState
from lambdas.models.wire import WireModel


class ScheduledJob(WireModel):
    type: str = Field(min_length=1, max_length=64, description="A registered job type.")
    payload: dict[str, Any] = Field(
        description="The job type's input; validated when the schedule is written."
    )
    max_attempts: int = Field(
        default=config.DEFAULT_MAX_ATTEMPTS,
        ge=1,
        le=config.MAX_POLICY_ATTEMPTS,
        description=(
            "Attempts of each job it creates. Default: its type's retry policy's (5 unless the type "
            "declares more); at most 10, or the policy's attempts when those are more."
        ),
    )
    priority: Priority = Field(default=Priority.NORMAL, description=PRIORITY_DESCRIPTION)


class CreateScheduleRequest(WireModel):
    name: str = Field(min_length=1, max_length=128)
    expression: str = Field(
        min_length=1,
        max_length=256,
        description="cron(minutes hours day-of-month month day-of-week year) or rate(value unit), as "
        "EventBridge Scheduler writes them.",
    )
    time_zone: str = Field(default="UTC", min_length=1, max_length=64, description="An IANA time zone name.")
    job: ScheduledJob
    overlap: Overlap = Field(
        default=Overlap.ALLOW,
        description="allow: every firing creates a job; skip: none while the previous job is not finished.",
    )
    state: ScheduleState = ScheduleState.ENABLED


class UpdateScheduleRequest(WireModel):
    name: str | None = Field(default=None, min_length=1, max_length=128)
    expression: str | None = Field(default=None, min_length=1, max_length=256)
    time_zone: str | None = Field(default=None, min_length=1, max_length=64)
    job: ScheduledJob | None = None
    overlap: Overlap | None = None
    state: ScheduleState | None = None


class ScheduleFiring(WireModel):
    job_id: str
    scheduled_for: str = Field(description="The time of the firing that created the job.")
    status: str | None = Field(default=None, description="The job's status now (null once it expired).")


class ScheduleView(WireModel):
    schedule_id: str
    owner: str = Field(description="The client it belongs to: its API key id (with IAM callers, its name).")
    name: str
    expression: str
    time_zone: str
    job: ScheduledJob
    overlap: Overlap
    state: ScheduleState
    created_at: str
    next_fire_times: list[str] = Field(description=f"The next {NEXT_SHOWN} firings (none while paused).")
    last_jobs: list[ScheduleFiring] = Field(description="The jobs of its last firings, newest first.")
    failing: bool = Field(
        description="Its last firing failed or was skipped (see `lastError`); false again once one fires."
    )
    last_error: str | None = Field(
        default=None, description="Why its last firing failed or was skipped (null when it fired)."
    )
    last_error_at: str | None = Field(default=None, description="When that was.")

    @classmethod
    def of(cls, schedule: Schedule, next_times: list[str], last_jobs: list[ScheduleFiring]) -> Self:
        return cls(
            schedule_id=schedule.schedule_id,
            owner=schedule.owner,
            name=schedule.name,
            expression=schedule.expression,
            time_zone=schedule.time_zone,
            job=ScheduledJob(
                type=schedule.job_type,
                payload=schedule.payload,
                max_attempts=schedule.max_attempts,
                priority=schedule.priority,
            ),
            overlap=schedule.overlap,
            state=schedule.state,
            created_at=schedule.created_at,
            next_fire_times=next_times,
            last_jobs=last_jobs,
            failing=schedule.last_error is not None,
            last_error=schedule.last_error,
            last_error_at=schedule.last_error_at,
        )


class SchedulePage(WireModel):
    schedules: list[ScheduleView] = Field(description="Failing ones first within the page.")
    next_cursor: str | None = Field(default=None, description="The next page's cursor; null at the end.")
