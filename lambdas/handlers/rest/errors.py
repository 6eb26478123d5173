"""The api's one map from what went wrong to an HTTP status and the JSON error body.

Every refusal is `{"error": {"code", "message", "details"?}}` with a 4xx status, chosen by the
exception's type (never by its message). Only a bug answers 500, and it is logged.
"""

import binascii
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from lambdas import config
from lambdas.jobs.base import InvalidPayloadError
from lambdas.lifecycle.errors import (
    ConcurrentRotationError,
    ForbiddenError,
    IdempotencyConflictError,
    InvalidCursorError,
    InvalidScheduleError,
    InvalidStartTimeError,
    JobNotFoundError,
    JobTooLargeError,
    NotCancellableError,
    NotReschedulableError,
    NotRetryableError,
    NotWaitingError,
    ScheduleLimitError,
    ScheduleNotFoundError,
    TooManyAttemptsError,
    UnknownJobTypeError,
)
from lambdas.models.api import ErrorDetail, ErrorResponse
from lambdas.observability import logger


class BodyTooLargeError(ValueError):
    def __init__(self) -> None:
        super().__init__(f"the request body is over {config.MAX_BODY_BYTES} bytes")


class MalformedBodyError(ValueError):
    """Not JSON, or not text: invalid base64 or UTF-8, or a string with a lone surrogate."""


class NestingTooDeepError(ValueError):
    def __init__(self) -> None:
        super().__init__(
            f"the request body nests arrays and objects deeper than {config.MAX_JSON_DEPTH} levels"
        )


_BY_TYPE: dict[type[Exception], tuple[int, str]] = {
    BodyTooLargeError: (413, "payload_too_large"),
    JobTooLargeError: (413, "payload_too_large"),
    MalformedBodyError: (400, "malformed_json"),
    # Raised by Powertools while decoding a base64 body, before the body reaches the JSON reader.
    binascii.Error: (400, "malformed_json"),
    UnicodeDecodeError: (400, "malformed_json"),
    NestingTooDeepError: (400, "nesting_too_deep"),
    JobNotFoundError: (404, "job_not_found"),
    IdempotencyConflictError: (409, "idempotency_conflict"),
    UnknownJobTypeError: (422, "unknown_job_type"),
    InvalidCursorError: (400, "invalid_cursor"),
    NotRetryableError: (409, "not_retryable"),
    NotCancellableError: (409, "not_cancellable"),
    NotWaitingError: (409, "not_waiting"),
    ForbiddenError: (403, "forbidden"),
    ConcurrentRotationError: (409, "concurrent_rotation"),
    NotReschedulableError: (409, "not_reschedulable"),
    InvalidStartTimeError: (400, "invalid_start_time"),
    TooManyAttemptsError: (400, "invalid_request"),  # what the request model answers for any bound
    ScheduleNotFoundError: (404, "schedule_not_found"),
    InvalidScheduleError: (400, "invalid_schedule"),
    ScheduleLimitError: (409, "schedule_limit"),
}


def error_response(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> Response[Any]:
    body = ErrorResponse(error=ErrorDetail(code=code, message=message, details=details))
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.model_dump_json(by_alias=True, exclude_none=True),
    )


def install_error_map(app: APIGatewayRestResolver) -> None:
    """Register the map on `app`: the only place a domain error becomes an HTTP status."""

    @app.exception_handler(list(_BY_TYPE))
    def _refused(error: Exception) -> Response[Any]:
        status, code = next(_BY_TYPE[t] for t in type(error).__mro__ if t in _BY_TYPE)
        return error_response(status, code, str(error))

    @app.exception_handler(RequestValidationError)
    def _invalid_request(error: RequestValidationError) -> Response[Any]:
        details = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in error.errors()
        ]
        return error_response(400, "invalid_request", "the request does not match the API's schema", details)

    @app.exception_handler(InvalidPayloadError)
    def _invalid_payload(error: InvalidPayloadError) -> Response[Any]:
        return error_response(422, error.code, str(error), error.details)

    @app.not_found
    def _no_route(_: Exception) -> Response[Any]:
        event = app.current_event
        return error_response(404, "not_found", f"no route for {event.http_method} {event.path}")

    @app.exception_handler(Exception)
    def _internal(_: Exception) -> Response[Any]:
        logger.exception("unhandled error")
        return error_response(500, "internal_error", "the request could not be completed; try again")
