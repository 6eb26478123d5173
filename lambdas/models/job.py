"""The job record as the lifecycle sees it, independent of how DynamoDB stores it."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lambdas.models.waiting import WaitingFor


class JobStatus(StrEnum):
    # Due beyond SQS's longest message delay (the schedule horizon): no message exists yet; the sweep
    # hands it to SQS, with the delay that is left, once it is due within the horizon (docs/internals/scheduling.md).
    SCHEDULED = "scheduled"
    PENDING = "pending"
    PROCESSING = "processing"
    # A parent (a webhook fan-out) that handed its work to child jobs; it finishes when they all have.
    WAITING = "waiting"
    DONE = "done"
    DEAD = "dead"
    CANCELLED = "cancelled"  # by a caller, before it ran (or while its fan-out waited)

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.DEAD, JobStatus.CANCELLED)


class Priority(StrEnum):
    """Which of one owner's waiting jobs starts first, and which queue a job's message takes: a `high`
    job goes to its worker group's high queue, out of reach of a backlog (docs/design.md, flow control)."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"


class JobAction(StrEnum):
    """What a caller may do to a job (`POST /jobs/{jobId}/<action>`, and in bulk `POST /jobs/<action>`)."""

    RETRY = "retry"
    CANCEL = "cancel"


class AttemptOutcome(StrEnum):
    DONE = "done"  # the job succeeded, or handed its work to children
    RETRY = "retry"
    DEAD = "dead"
    EXPIRED = "expired"  # the lease ran out: the worker crashed or timed out


@dataclass(frozen=True)
class Attempt:
    """One attempt in a job's history; `ended_at` and `outcome` are None while it runs."""

    attempt: int
    started_at: str
    ended_at: str | None = None
    outcome: AttemptOutcome | None = None
    error: str | None = None


@dataclass(frozen=True)
class WorkflowStep:
    """One step of a workflow as its journal recorded it (`lambdas/lifecycle/workflows/journal.py`): `status` is
    running, done or failed (its last attempt's), `attempts` how many it started."""

    name: str
    status: str
    started_at: str
    ended_at: str | None = None
    attempts: int = 1
    error: str | None = None


class AlertClaim(StrEnum):
    """What a dead-letter consumer's claim on a dead job's alert found."""

    CLAIMED = "claimed"  # this consumer raises the alert
    SENT = "sent"  # the alert went out already (or there is no job any more)
    HELD = "held"  # another consumer holds an unexpired claim
    MOVED = "moved"  # the job left the state the claim was for (retried, or run again)


@dataclass(frozen=True)
class ChildCounts:
    total: int
    done: int
    dead: int
    cancelled: int = 0
    # The counts live in the fan-out's own small counters item (`codec.counters_id`), not on the parent:
    # False only for a pre-counters parent (its children started before counters items existed; its
    # counts are `childrenDone`... on its own item). Every branch on it (codec.job_from_values,
    # JobStore.await_children, reopen, cancel, ChildEndings._end_on_parent) can go once each deployed
    # stack has run with counters items for longer than FINISHED_TTL_DAYS: such parents have expired.
    apart: bool = True

    @property
    def pending(self) -> int:
        return max(self.total - self.done - self.dead - self.cancelled, 0)

    @property
    def complete(self) -> bool:
        return self.done + self.dead + self.cancelled >= self.total


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
    owner: str = ""
    status_at: int = 0  # epoch milliseconds the current status was entered
    # Counts every attempt the job ever started; `attempts` restarts at 0 on a manual retry.
    attempt_total: int = 0
    attempt_started_at: str | None = None
    history: tuple[Attempt, ...] = ()  # the last HISTORY_SLOTS ended attempts, oldest first
    reopened_at: int = 0  # epoch milliseconds of the last retry by a caller (0: never reopened)
    # Pending because of a limit or the job's own RetryLater: what for, until when; and how long the
    # job has waited so in all (bounded by LIMIT_MAX_WAIT_SECONDS).
    waiting_for: WaitingFor | None = None
    waited_seconds: int = 0
    retrying_since: int = 0  # epoch milliseconds its first failed attempt ended (0: none yet)
    run_at: int = 0  # epoch milliseconds its first attempt may start (0: whenever its message comes)
    steps: tuple[WorkflowStep, ...] = ()  # a workflow's, in the order they started
    execution: str | None = None  # a workflow's durable execution, once the worker handed it over
    priority: Priority = Priority.NORMAL


@dataclass(frozen=True)
class NewJob:
    job_id: str
    job_type: str
    payload: dict[str, Any]
    max_attempts: int
    delay_seconds: float = 0
    parent_id: str | None = None
    request_hash: str | None = None
    owner: str = ""
    # A job given a start time (`runAt`/`delaySeconds`): a message that comes before it cannot claim it,
    # and a job due beyond this horizon (seconds) is written `scheduled`; 0: no start time was asked.
    horizon_seconds: int = 0
    priority: Priority = Priority.NORMAL
