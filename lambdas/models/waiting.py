"""What a pending job waits for (a limit, or its own RetryLater): plain Python, so every function's job
record can carry it without loading pydantic (the dead-letter and recovery functions do not)."""

from dataclasses import dataclass
from enum import StrEnum


class LimitKind(StrEnum):
    """Why a job waits."""

    CONCURRENCY = "concurrency"  # every slot of its limit is held
    PER_SECOND = "perSecond"  # its limit's token bucket is empty
    PAUSED = "paused"  # a receiver answered 429/503 with Retry-After: the whole key waits
    RETRY_LATER = "retryLater"  # the job type asked to be run again later (RetryLater)
    SLEEP = "sleep"  # a workflow sleeps (`flow.sleep`): the key is the sleep's name
    EVENT = "event"  # a workflow waits for an event (`flow.wait_for_event`): the key is the event's name


@dataclass(frozen=True)
class WaitingFor:
    """What a pending job waits for: its limit (the job type's, or the job's own request), the limit's
    key, the earliest it may run again (epoch seconds), and why in words."""

    kind: LimitKind
    key: str | None
    until: float
    reason: str = ""
