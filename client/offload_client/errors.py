"""The client's failures. An API refusal carries the API's `error.code`, its message and the HTTP status."""

from __future__ import annotations

from typing import Any


class OffloadError(Exception):
    """Every failure the client raises."""


class Unreachable(OffloadError):
    """No answer: the connection failed or timed out (after the client's retries)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class WaitTimeout(OffloadError):
    """`wait` gave up: the job had not reached a terminal state in time. `job` is how it was last seen."""

    def __init__(self, message: str, job: Any) -> None:
        super().__init__(message)
        self.job = job


class ApiError(OffloadError):
    """The API answered an error status (or something that is not its JSON)."""

    def __init__(
        self,
        status: int,
        code: str | None,
        message: str,
        *,
        method: str = "",
        path: str = "",
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        said = f"{code}: {message}" if code else message
        if details:
            said += f" ({'; '.join(_detail(d) for d in details)})"
        # Below 400 the API answered, but not what its contract promises: `message` says what it answered.
        super().__init__(
            f"{method} {path} answered {status}: {said}"
            if status >= 400
            else " ".join(part for part in (method, path, message) if part)
        )
        self.status = status
        self.code = code  # the API's `error.code` (`not_found`, `not_retryable`, ...), None when absent
        self.message = message
        self.method = method
        self.path = path
        # The API's `error.details` (a 422's field errors: `loc`, `msg`, `type`), None when absent.
        self.details = details


class IncompleteAnswer(ApiError):
    """A success answer without a field its schema promises (`submit` without `jobId`): not the API's
    answer (a proxy's, another service's), or not one this client can use."""


class InvalidRequest(ApiError):
    """400 or 422: the request itself is wrong; `message` says how."""


class Forbidden(ApiError):
    """401 or 403: the key is missing, wrong, or not allowed on this route."""


class NotFound(ApiError):
    """404: no such job (or not this client's)."""


class Conflict(ApiError):
    """409: the job is not in a state that allows this (e.g. `not_retryable`)."""


class RateLimited(ApiError):
    """429 after the client's retries; `retry_after` is the API's Retry-After in seconds (None if absent)."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    422: InvalidRequest,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
}


def _detail(detail: dict[str, Any]) -> str:
    """`payload.to.0: value is not a valid email address`, from one of the API's error details."""
    where = ".".join(str(part) for part in detail.get("loc") or ())
    what = str(detail.get("msg", detail))
    return f"{where}: {what}" if where else what


def error_class(status: int) -> type[ApiError]:
    return _BY_STATUS.get(status, ApiError)
