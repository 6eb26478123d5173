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
