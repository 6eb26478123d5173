"""What a job type is: the plug-in contract between the job lifecycle and the work itself.

A job type is one module under `lambdas/jobs/types/` that defines a pydantic payload model and a
`run(payload, context)` function, and exposes them as a `JobType`. `run` returns the job's result
(anything JSON-serialisable, or `AwaitChildren` when it handed its work to child jobs) or raises:

- `PermanentJobError` when the input can never succeed: the job goes to `dead` at once;
- `RetryableJobError` (or any other exception) for a transient failure: the job is retried with
  backoff until it runs out of attempts.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

P = TypeVar("P", bound=BaseModel)


class JobError(Exception):
    """Base of the errors a job type raises on purpose."""


class PermanentJobError(JobError):
    """The input can never succeed; retrying would only repeat the failure."""


class RetryableJobError(JobError):
    """A transient failure. `retry_after` (seconds) is a lower bound for the next attempt's delay."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidPayloadError(JobError):
    """The payload cannot be accepted: the API answers 422 with this message (and `details`, if any)."""

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class JobContext:
    """What a running job may know about itself."""

    job_id: str
    job_type: str
    attempt: int
    max_attempts: int
    parent_id: str | None = None
    remaining_ms: Callable[[], int] = field(default=lambda: 60_000)


@dataclass(frozen=True)
class AwaitChildren:
    """Returned by a job that created `total` child jobs; it finishes when they all have."""

    total: int
    result: Any = None


@dataclass(frozen=True)
class JobType(Generic[P]):
    name: str
    payload_model: type[P]
    run: Callable[[P, JobContext], Any]
    # Extra checks at submission beyond the model (for example DNS look-ups); raise InvalidPayloadError.
    check_submission: Callable[[P], None] | None = None
    # Child-only types (a fan-out's deliveries) are not accepted by the public API.
    public: bool = True
