"""What the lifecycle refuses, as types: the API maps each to its HTTP status in one place.

Plain classes with no imports, so the api function can register its error map at cold start without
loading the lifecycle itself.
"""


class UnknownJobTypeError(LookupError):
    """The request names a job type that does not exist or is not offered over the API."""


class IdempotencyConflictError(Exception):
    """The Idempotency-Key was used before with a different request body."""


class JobNotFoundError(LookupError):
    pass


class JobTooLargeError(ValueError):
    """The job, as stored, would be over the store's item size limit (the store's ItemTooLargeError)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the job would be stored as {size} bytes; {limit} bytes allowed")
        self.size = size
        self.limit = limit


class InvalidCursorError(ValueError):
    """A list's cursor is not one this API handed out (or was made for another query)."""


class NotRetryableError(Exception):
    """Only a dead job, or a finished fan-out with dead children, can be retried."""


class NotCancellableError(Exception):
    """Only a pending job, or a waiting fan-out, can be cancelled."""


class NotWaitingError(Exception):
    """An event for a job that is not a workflow waiting for an event of that name now."""


class ForbiddenError(PermissionError):
    """The caller's key may not do this (bulk actions are the operator's)."""


class ConcurrentRotationError(Exception):
    """A client's webhook secrets kept changing under this write (other rotations at the same time)."""


class NotReschedulableError(Exception):
    """Only a job that has not started (`scheduled`, or `pending` with a start time) can be rescheduled."""


class TooManyAttemptsError(ValueError):
    """`maxAttempts` above what the job's type allows (10, or its retry policy's attempts if more)."""


class InvalidStartTimeError(ValueError):
    """A start time too far ahead (over a year), or both `runAt` and `delaySeconds`."""


class ScheduleNotFoundError(LookupError):
    pass


class InvalidScheduleError(ValueError):
    """An expression or time zone EventBridge Scheduler would refuse."""


class ScheduleLimitError(Exception):
    """The client keeps as many schedules as it may."""
