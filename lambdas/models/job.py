"""The job record as the lifecycle sees it, independent of how DynamoDB stores it."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class JobStatus(StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    # A parent (a webhook fan-out) that handed its work to child jobs; it finishes when they all have.
    WAITING = "waiting"
    DONE = "done"
    DEAD = "dead"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.DEAD)


class AlertClaim(StrEnum):
    """What a dead-letter consumer's claim on a dead job's alert found."""

    CLAIMED = "claimed"  # this consumer raises the alert
    SENT = "sent"  # the alert went out already (or there is no job any more)
    HELD = "held"  # another consumer holds an unexpired claim


@dataclass(frozen=True)
class ChildCounts:
    total: int
    done: int
    dead: int

    @property
    def pending(self) -> int:
        return max(self.total - self.done - self.dead, 0)

    @property
    def complete(self) -> bool:
        return self.done + self.dead >= self.total


@dataclass(frozen=True)
class Job:
    job_id: str
    job_type: str
    status: JobStatus
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    created_at: str
    updated_at: str
    due_at: int  # epoch milliseconds
    last_error: str | None = None
    result: Any = None
    parent_id: str | None = None
    children: ChildCounts | None = None
    request_hash: str | None = None
    alerted: bool = False


@dataclass(frozen=True)
class NewJob:
    job_id: str
    job_type: str
    payload: dict[str, Any]
    max_attempts: int
    delay_seconds: int = 0
    parent_id: str | None = None
    request_hash: str | None = None
