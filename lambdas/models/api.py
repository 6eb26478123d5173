"""The HTTP API's request and response bodies (camelCase on the wire)."""

import dataclasses
from collections.abc import Sequence
from typing import Any, Self

from pydantic import AwareDatetime, Field, model_validator

from lambdas import config
from lambdas.models.deliveries import DeliveryAttempt
from lambdas.models.job import Attempt, Job, JobAction, JobStatus, Priority, WorkflowStep
from lambdas.models.timestamps import iso_time
from lambdas.models.waiting import WaitingFor
from lambdas.models.wire import WireModel

PRIORITY_DESCRIPTION = (
    "Among one caller's jobs waiting on a limit, `high` start before `normal` before `low`; a `high` job's"
    " message takes its worker group's high queue, so a backlog of other jobs does not hold it back."
)


class SubmitJobRequest(WireModel):
    type: str = Field(min_length=1, max_length=64, description="A registered job type, e.g. send_email.")
    payload: dict[str, Any] = Field(description="The job type's input; validated against that type's model.")
    max_attempts: int | None = Field(
        default=None,
        ge=1,
        le=config.MAX_POLICY_ATTEMPTS,
        description=(
            "Attempts before the job is declared dead. Default: its type's retry policy's (5 unless the "
            "type declares more); at most 10, or the policy's attempts when those are more."
        ),
    )
    delay_seconds: int = Field(
        default=0,
        ge=0,
        le=config.MAX_SCHEDULE_AHEAD_SECONDS,
        description="Seconds before the first attempt (up to a year). Not with `runAt`.",
    )
    run_at: AwareDatetime | None = Field(
        default=None,
        description=(
            "When the first attempt may start (RFC 3339 with a UTC offset; up to a year ahead; a past time "
            "runs now). Not with `delaySeconds`. A job due beyond SQS's 900 s is `scheduled` until then."
        ),
    )
    priority: Priority = Field(default=Priority.NORMAL, description=PRIORITY_DESCRIPTION)

    @model_validator(mode="after")
    def _one_start_time(self) -> Self:
        if self.run_at is not None and self.delay_seconds:
            raise ValueError("give runAt or delaySeconds, not both")
        return self


class RescheduleRequest(WireModel):
    run_at: AwareDatetime = Field(
        description="The new start time (RFC 3339 with a UTC offset; up to a year ahead; a past time runs now)."
    )


class EventRequest(WireModel):
    name: str = Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="The event's name: what the workflow's `flow.wait_for_event(name, ...)` waits for.",
    )
    data: Any = Field(default=None, description="Any JSON: what `wait_for_event` returns to the workflow.")


class EventAccepted(WireModel):
    job_id: str
    name: str = Field(description="The event's name, as the waiting workflow receives it.")


class SubmitJobResponse(WireModel):
    job_id: str
    status: str


class ChildrenView(WireModel):
    total: int
    pending: int = Field(description="Children not finished yet.")
    delivered: int = Field(description="Children that succeeded (state `done`).")
    failed: int = Field(description="Children that were given up on (state `dead`).")
    cancelled: int = Field(default=0, description="Children cancelled before they ran.")


class WaitingForView(WireModel):
    """Why a pending job has not run yet, and the earliest it will try again; or what a waiting workflow
    waits for, and until when. Waiting spends no attempt."""

    limit: str = Field(
        description="concurrency or perSecond (its type's limit), paused (its key's receiver asked for a "
        "pause with Retry-After), or retryLater (the job asked to run again later); for a workflow, sleep "
        "(`flow.sleep`) or event (`flow.wait_for_event`)."
    )
    key: str | None = Field(
        default=None,
        description="The limit's key this job counts against (* for the whole type); a workflow's sleep's "
        "or event's name.",
    )
    retry_at: str = Field(
        description="The earliest the job tries again; when a workflow's sleep ends or its wait times out."
    )
    reason: str | None = None

    @classmethod
    def of(cls, waiting: WaitingFor) -> Self:
        return cls(
            limit=waiting.kind.value,
            key=waiting.key,
            retry_at=iso_time(waiting.until),
            reason=waiting.reason or None,
        )


class StepView(WireModel):
    """One step of a workflow (`flow.step`), as its last attempt left it."""

    name: str
    status: str = Field(description="running, done, or failed (its last attempt failed).")
    started_at: str = Field(description="When its last attempt started.")
    ended_at: str | None = None
    attempts: int
    error: str | None = None

    @classmethod
    def of(cls, step: WorkflowStep) -> Self:
        return cls(**dataclasses.asdict(step))


class HistoryEntry(WireModel):
    attempt: int = Field(description="Counts up across manual retries.")
    started_at: str
    ended_at: str | None = None
    outcome: str | None = Field(default=None, description="done, retry, dead or expired; null while running.")
    error: str | None = None

    @classmethod
    def of(cls, attempt: Attempt) -> Self:
        outcome = attempt.outcome.value if attempt.outcome else None
        return cls(
            attempt=attempt.attempt,
            started_at=attempt.started_at,
            ended_at=attempt.ended_at,
            outcome=outcome,
            error=attempt.error,
        )


HISTORY_SHOWN = 10


def history_of(job: Job) -> list[HistoryEntry]:
    """The last attempts, oldest first, the running one (if any) last."""
    entries = [HistoryEntry.of(attempt) for attempt in job.history]
    if job.status is JobStatus.PROCESSING and job.attempt_started_at:
        entries.append(HistoryEntry(attempt=job.attempt_total, started_at=job.attempt_started_at))
    return entries[-HISTORY_SHOWN:]


class DownloadView(WireModel):
    key: str
    url: str = Field(description="Presigned URL: GET the file here until `expiresAt`.")
    expires_at: str = Field(
        description="The URL stops working at this time (ISO-8601, UTC); read the job again for a new one."
    )


class JobView(WireModel):
    job_id: str
    type: str
    status: str
    priority: Priority
    payload: dict[str, Any] = Field(description="The job's input, as submitted.")
    attempts: int = Field(description="Attempts since the job was submitted or last retried.")
    max_attempts: int
    last_error: str | None = Field(
        default=None,
        description="The last failed attempt's error while the job is not done; a done job's earlier errors "
        "are in its `history`.",
    )
    result: Any = None
    created_at: str
    updated_at: str
    status_at: str = Field(description="When the job entered its current status.")
    next_attempt_at: str | None = Field(
        default=None, description="When a pending or scheduled job is due to run (again)."
    )
    run_at: str | None = Field(
        default=None, description="The start time asked for (`runAt`, `delaySeconds`), until the job starts."
    )
    parent_id: str | None = None
    waiting_for: WaitingForView | None = Field(
        default=None,
        description="A pending job held back by a limit or its own request: what for, until when.",
    )
    children: ChildrenView | None = Field(
        default=None, description="Counts of child jobs (a fan-out's deliveries)."
    )
    downloads: list[DownloadView] | None = Field(
        default=None,
        description="For a done job that wrote files (process_file): a fresh presigned URL for each, on every read.",
    )
    history: list[HistoryEntry] = Field(
        default_factory=list, description="The last 10 attempts, oldest first."
    )
    steps: list[StepView] | None = Field(
        default=None, description="A workflow's steps, in the order they started (plain jobs have none)."
    )
    allowed_actions: list[JobAction] = Field(
        description=(
            "What the caller may do to the job as it is now: `retry` (a dead job, or a finished fan-out"
            " with dead children) and `cancel` (a pending job or a waiting fan-out). The action itself"
            " checks again, so a job that moved meanwhile answers 409."
        ),
        examples=[["retry"], ["cancel"], []],
    )

    @classmethod
    def of(
        cls, job: Job, allowed_actions: Sequence[JobAction], downloads: list[DownloadView] | None = None
    ) -> Self:
        counts = job.children
        return cls(
            **summary_fields(job),
            allowed_actions=list(allowed_actions),
            payload=job.payload,
            result=job.result,
            history=history_of(job),
            next_attempt_at=iso_time(job.due_at / 1000) if job.status in _DUE_SHOWN else None,
            run_at=iso_time(job.run_at / 1000) if job.run_at else None,
            waiting_for=WaitingForView.of(job.waiting_for)
            if job.waiting_for is not None and job.status in _WAITING_SHOWN
            else None,
            steps=[StepView.of(step) for step in job.steps] if job.execution is not None else None,
            downloads=downloads or None,
            children=None
            if counts is None
            else ChildrenView(
                total=counts.total,
                pending=counts.pending,
                delivered=counts.done,
                failed=counts.dead,
                cancelled=counts.cancelled,
            ),
        )


_DUE_SHOWN = (JobStatus.PENDING, JobStatus.SCHEDULED)
_WAITING_SHOWN = (JobStatus.PENDING, JobStatus.WAITING)  # a waiting fan-out has none; a workflow may


def status_time(job: Job) -> str:
    return iso_time(job.status_at / 1000) if job.status_at else job.updated_at


def summary_fields(job: Job) -> dict[str, Any]:
    """What a job's summary and its full view share."""
    return {
        "job_id": job.job_id,
        "type": job.job_type,
        "status": job.status.value,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "status_at": status_time(job),
        # A done job's last error is history (an attempt before the one that succeeded), not its state.
        "last_error": None if job.status is JobStatus.DONE else job.last_error,
        "parent_id": job.parent_id,
        "priority": job.priority,
    }


class JobSummary(WireModel):
    job_id: str
    type: str
    status: str
    attempts: int
    max_attempts: int
    created_at: str
    updated_at: str
    status_at: str
    last_error: str | None
    parent_id: str | None
    priority: Priority

    @classmethod
    def of(cls, job: Job) -> Self:
        return cls(**summary_fields(job))


class JobPage(WireModel):
    jobs: list[JobSummary]
    next_cursor: str | None


class ChildSummary(WireModel):
    job_id: str
    endpoint_id: str
    url: str
    status: str
    attempts: int
    last_error: str | None


class ChildPage(WireModel):
    children: list[ChildSummary]
    next_cursor: str | None


class DeliveryView(WireModel):
    delivery_id: str
    endpoint_id: str
    attempt: int
    attempted_at: str
    outcome: str
    http_status: int | None
    latency_ms: int
    response: str | None
    error: str | None

    @classmethod
    def of(cls, attempt: DeliveryAttempt) -> Self:
        fields = dataclasses.asdict(attempt)
        del fields["fanout_id"], fields["event_type"]
        return cls(**{**fields, "outcome": attempt.outcome.value})


class DeliveryPage(WireModel):
    deliveries: list[DeliveryView]
    next_cursor: str | None


class BulkRequest(WireModel):
    status: JobStatus | None = Field(
        default=None, description="Jobs in this status (default: dead for retry, pending for cancel)."
    )
    type: str | None = Field(default=None, min_length=1, max_length=64)
    before: AwareDatetime | None = Field(
        default=None, description="Only jobs that entered the status before this time."
    )
    limit: int = Field(default=1000, ge=1, le=10_000, description="At most this many jobs are matched.")


class ErrorDetail(WireModel):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(WireModel):
    error: ErrorDetail
