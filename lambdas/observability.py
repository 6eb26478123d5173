"""Powertools Logger, Tracer and Metrics shared by every function (service and namespace from config).

The tracer is built on the first invocation that X-Ray samples, not at import: Powertools' `Tracer`
imports the X-Ray SDK and patches botocore, a cost every cold start paid even where no trace is
recorded (tracing disabled, outside Lambda, or a request the sampling rules passed over). What that
gains, and when to remove it: docs/decisions/lazy-tracer.md.
"""

import os
from collections.abc import Callable
from functools import wraps
from threading import Lock
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

from lambdas import config
from lambdas.redaction import RedactingFormatter

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

# Every line redacted: no secret value the process holds reaches the logs (lambdas/redaction.py).
logger = Logger(service=config.SERVICE_NAME, logger_formatter=RedactingFormatter())
# The namespace is the stack's (`Offload`, or `Offload-<stage>`): Powertools reads it from
# POWERTOOLS_METRICS_NAMESPACE, which every function's environment holds (infra/functions.py); a process
# without it (a test, a bench) counts under the default.
metrics = Metrics(service=config.SERVICE_NAME)
if metrics.namespace is None:
    metrics.namespace = config.METRICS_NAMESPACE

Handler = Callable[[Any, Any], Any]


def tracing_active() -> bool:
    """Whether X-Ray records this invocation, read per invocation as Lambda sets the header per request.

    Powertools itself disables its tracer outside Lambda (no LAMBDA_TASK_ROOT) and on
    POWERTOOLS_TRACE_DISABLED; a `Sampled=0` header means X-Ray keeps nothing of this request either.
    """
    if os.environ.get("POWERTOOLS_TRACE_DISABLED", "").lower() in ("1", "true", "yes", "on"):
        return False
    if "LAMBDA_TASK_ROOT" not in os.environ:
        return False
    return "Sampled=0" not in os.environ.get("_X_AMZN_TRACE_ID", "")


class LazyTracer:
    """`capture_lambda_handler` as Powertools' Tracer offers it, the SDK imported on first sampled use."""

    def __init__(self, service: str) -> None:
        self._service = service
        self._tracer: Tracer | None = None
        self._lock = Lock()

    def _real(self) -> "Tracer":
        with self._lock:
            if self._tracer is None:
                from aws_lambda_powertools import Tracer

                self._tracer = Tracer(service=self._service)
            return self._tracer

    def capture_lambda_handler(self, handler: Handler) -> Handler:
        return self._traced(handler, capture_response=True)

    def capture_lambda_handler_without_response(self, handler: Handler) -> Handler:
        """For a handler whose answer is a caller's data (the api's): the trace keeps its timing and
        errors, never the response body, which X-Ray would otherwise store as segment metadata."""
        return self._traced(handler, capture_response=False)

    def _traced(self, handler: Handler, capture_response: bool) -> Handler:
        traced: list[Handler] = []

        @wraps(handler)
        def invoke(event: Any, context: Any) -> Any:
            if not tracing_active():
                return handler(event, context)
            if not traced:
                traced.append(self._real().capture_lambda_handler(handler, capture_response=capture_response))
            return traced[0](event, context)

        return invoke


tracer = LazyTracer(service=config.SERVICE_NAME)


def log_transition(
    job_id: str, job_type: str, from_status: str, to_status: str, attempt: int, error: str | None = None
) -> None:
    """One line per job state change: what the local runtime shows and what operators search for."""
    fields: dict[str, object] = {
        "event": "job_transition",
        "jobId": job_id,
        "jobType": job_type,
        "from": from_status,
        "to": to_status,
        "attempt": attempt,
    }
    if error:
        fields["error"] = error
    logger.info(f"job {job_id} {from_status} -> {to_status}", extra=fields)
