"""The HTTP API's request and response bodies (camelCase on the wire)."""

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from lambdas import config
from lambdas.models.job import Job, JobStatus
from lambdas.models.timestamps import iso_time


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SubmitJobRequest(_Wire):
    type: str = Field(min_length=1, max_length=64, description="A registered job type, e.g. send_email.")
    payload: dict[str, Any] = Field(description="The job type's input; validated against that type's model.")
    max_attempts: int = Field(
        default=config.DEFAULT_MAX_ATTEMPTS,
        ge=1,
        le=config.MAX_ATTEMPTS_LIMIT,
        description="Attempts before the job is declared dead.",
    )
    delay_seconds: int = Field(
        default=0, ge=0, le=config.MAX_DELAY_SECONDS, description="Seconds before the first attempt."
    )


class SubmitJobResponse(_Wire):
    job_id: str
    status: str


class ChildrenView(_Wire):
    total: int
    pending: int = Field(description="Children not finished yet.")
    delivered: int = Field(description="Children that succeeded (state `done`).")
    failed: int = Field(description="Children that were given up on (state `dead`).")


class DownloadView(_Wire):
    key: str
    url: str = Field(description="Presigned URL: GET the file here until `expiresAt`.")
    expires_at: str = Field(
        description="The URL stops working at this time (ISO-8601, UTC); read the job again for a new one."
    )


class JobView(_Wire):
    job_id: str
    type: str
    status: str
    payload: dict[str, Any] = Field(description="The job's input, as submitted.")
    attempts: int
    max_attempts: int
    last_error: str | None = None
    result: Any = None
    created_at: str
    updated_at: str
    next_attempt_at: str | None = Field(default=None, description="When a pending job is due to run again.")
    parent_id: str | None = None
    children: ChildrenView | None = Field(
        default=None, description="Counts of child jobs (a fan-out's deliveries)."
    )
    downloads: list[DownloadView] | None = Field(
        default=None,
        description="For a done job that wrote files (process_file): a fresh presigned URL for each, on every read.",
    )

    @classmethod
    def of(cls, job: Job, downloads: list[DownloadView] | None = None) -> Self:
        counts = job.children
        return cls(
            job_id=job.job_id,
            type=job.job_type,
            status=job.status.value,
            payload=job.payload,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            last_error=job.last_error,
            result=job.result,
            created_at=job.created_at,
            updated_at=job.updated_at,
            next_attempt_at=iso_time(job.due_at / 1000) if job.status is JobStatus.PENDING else None,
            parent_id=job.parent_id,
            downloads=downloads or None,
            children=None
            if counts is None
            else ChildrenView(
                total=counts.total, pending=counts.pending, delivered=counts.done, failed=counts.dead
            ),
        )


class ErrorDetail(_Wire):
    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorResponse(_Wire):
    error: ErrorDetail
