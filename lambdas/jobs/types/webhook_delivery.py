"""`webhook_delivery`: one signed POST of a fan-out's event to one endpoint (a child job, not public).

Each attempt checks the URL against the SSRF policy again (DNS may have changed since submission),
connects to the address it checked, signs the body per Standard Webhooks with its client's secrets (the
current one, and one rotated out less than 24 h ago) and records the attempt in the delivery log,
whatever its outcome. The body names the client (`client`, its API key id): what a receiver verifies
includes who submitted the event. How the response is read:

- 2xx: delivered;
- 410 Gone: the endpoint was removed; dead at once, no retries;
- 429 or 503 with `Retry-After`: the receiver asked for a pause: every delivery of that client to that
  URL waits until then (`RetryLater(pause=True)`), spending no attempt;
- 408, 429, 5xx, timeouts and connection errors: retried with backoff, no sooner than `Retry-After`;
- anything else (other 4xx, 3xx since redirects are not followed, 1xx): dead at once.

A small event (its body at most CARRIED_EVENT_BYTES) is in the child's payload, as the exact bytes to
send, so its delivery reads nothing. A larger one is not copied into each child: the child reads it from
its parent fan-out's record; the parent's payload never changes, so the body is built once per fan-out
and kept for the process's other deliveries of the same event (a worker batch usually holds several).
The batch's threads asking for one fan-out at once wait for a single read.

The attempt's log line is handed to `record_delivery`, which commits it with the attempt's outcome.
"""

import email.utils
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from lambdas import config
from lambdas.jobs import ssrf, webhook_signing
from lambdas.jobs.base import (
    Capability,
    JobContext,
    JobType,
    PermanentJobError,
    RetryableJobError,
    RetryLater,
)
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.models.job import Job
from lambdas.models.limits import Limit, LimitKey
from lambdas.models.retry import OUTAGE_RETRIES
from lambdas.models.settings import WebhookPolicySettings, forget_on_reset
from lambdas.models.timestamps import iso_time
from lambdas.observability import logger

if TYPE_CHECKING:
    from lambdas.jobs.webhook_http import HttpOutcome

DELIVERY_TYPE = "webhook_delivery"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$"
MAX_RETRY_AFTER_SECONDS = config.MAX_RETRY_AFTER_SECONDS
_DELIVERY_NAMESPACE = uuid.UUID("2d6b4c8e-95f1-4c3a-b1f0-7a3e5d9c0b42")
# Leave this much of the invocation for recording the outcome after the HTTP exchange.
_RESERVED_MS = 5_000
# Fan-outs whose event body is kept per process (a worker batch usually holds several of their children).
_EVENT_CACHE_SIZE = 16
# An event body up to this size is carried in each child's payload, so its delivery reads no parent:
# a child item stays under 2 KB (its claim and outcome cost what they did), and 1,000 endpoints add
# at most 1 MB of child items to the fan-out's writes.
CARRIED_EVENT_BYTES = 1024
# Answers whose Retry-After is back-pressure (the host is overloaded or rate-limiting), not one failure.
_BACK_PRESSURE = (429, 503)


class HttpVerdict(StrEnum):
    """What an endpoint's answer means for the delivery."""

    DELIVERED = "delivered"
    GONE = "gone"  # 410: the endpoint was removed
    RETRY = "retry"
    PERMANENT = "permanent"


def target_policy(settings: WebhookPolicySettings) -> ssrf.TargetPolicy:
    """Where webhooks may go in this deployment; the API and the worker apply the same policy."""
    return ssrf.TargetPolicy(
        allow_http=settings.allow_http_webhooks, allow_loopback=settings.allow_loopback_webhooks
    )


class WebhookDeliveryPayload(BaseModel):
    """A child job's payload: its endpoint, and the event's exact body when it is small (at most
    CARRIED_EVENT_BYTES); otherwise the event is read from the parent fan-out."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    endpoint_id: str = Field(alias="endpointId", pattern=NAME_PATTERN)
    url: str = Field(min_length=1, max_length=ssrf.MAX_URL_LENGTH)
    event_type: str | None = Field(None, alias="eventType")
    event_body: str | None = Field(None, alias="eventBody", max_length=CARRIED_EVENT_BYTES)

    def carried_event(self) -> "_Event | None":
        if self.event_type is None or self.event_body is None:
            return None
        return _Event(self.event_type, self.event_body.encode())


def delivery_id(fanout_id: str, endpoint_id: str) -> str:
    """The child job id for one endpoint of one fan-out; also the `webhook-id` the receiver sees."""
    return str(uuid.uuid5(_DELIVERY_NAMESPACE, f"{fanout_id}\n{endpoint_id}"))


class _Event:
    __slots__ = ("body", "event_type")

    def __init__(self, event_type: str, body: bytes) -> None:
        self.event_type = event_type
        self.body = body


class _EventCache:
    """The events of recent fan-outs, by fan-out id: a parent's payload never changes. One read per
    fan-out: threads that ask while it is being read wait for it (a lock per fan-out being read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, _Event] = {}
        self._reading: dict[str, threading.Lock] = {}

    def get(self, fanout_id: str, read_parent: Callable[[], Job | None]) -> _Event:
        with self._lock:
            found = self._events.get(fanout_id)
            if found is not None:
                return found
            reading = self._reading.setdefault(fanout_id, threading.Lock())
        with reading:
            with self._lock:
                found = self._events.get(fanout_id)
            if found is not None:
                return found  # another thread read it while this one waited
            try:
                event = _event_of(fanout_id, read_parent())
            except BaseException:
                with self._lock:
                    self._reading.pop(fanout_id, None)
                raise
            with self._lock:
                if len(self._events) >= _EVENT_CACHE_SIZE:
                    self._events.clear()
                self._events[fanout_id] = event
                self._reading.pop(fanout_id, None)
            return event

    def cache_clear(self) -> None:
        with self._lock:
            self._events.clear()


def _event_of(fanout_id: str, parent: Job | None) -> _Event:
    """The event a fan-out sends, as the exact bytes every endpoint receives."""
    if parent is None:
        raise PermanentJobError(f"fan-out {fanout_id} no longer exists")
    event_type = str(parent.payload["eventType"])
    return _Event(event_type, event_body(event_type, parent.payload["data"], parent.created_at, parent.owner))


def event_body(event_type: str, data: Any, timestamp: str, client: str) -> bytes:
    """The bytes every endpoint of a fan-out receives; `client` (its owner) is signed with them."""
    body = {"event": event_type, "client": client, "data": data, "timestamp": timestamp}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


_events = _EventCache()
forget_on_reset(_events)


def run(payload: WebhookDeliveryPayload, context: JobContext) -> dict[str, Any]:
    # `requests` is imported here, not at module level: the API function imports this module (through
    # the registry) but never delivers anything.
    from lambdas.jobs import webhook_http

    if context.parent_id is None:
        raise PermanentJobError("a webhook delivery must belong to a fan-out")
    event = payload.carried_event() or _events.get(context.parent_id, context.read_parent)
    attempt = _Attempt(payload, context, event.event_type)
    policy = target_policy(context.settings)
    try:
        target = ssrf.resolve(ssrf.parse(payload.url, policy), policy)
    except ssrf.RefusedTargetError as error:
        attempt.record(DeliveryOutcome.FAILED, error=f"refused: {error}")
        raise PermanentJobError(f"endpoint refused by the SSRF policy: {error}") from None
    except ssrf.UnresolvedTargetError as error:
        attempt.record(attempt.outcome_of(HttpVerdict.RETRY), error=str(error))
        raise RetryableJobError(str(error)) from None

    timestamp = int(time.time())
    keys = [webhook_signing.signing_key(secret) for secret in context.signing_secrets()]
    headers = webhook_signing.headers(keys, context.job_id, timestamp, event.body)
    connect_timeout, read_timeout, total_timeout = _timeouts(context)
    outcome = webhook_http.post(
        target,
        event.body,
        headers,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        total_timeout=total_timeout,
    )
    verdict = classify(outcome)
    response_text = outcome.body.decode("utf-8", errors="replace") if outcome.body else None
    attempt.record(
        attempt.outcome_of(verdict),
        http_status=outcome.status,
        latency_ms=outcome.latency_ms,
        error=outcome.error,
        response=response_text,
    )
    if verdict is HttpVerdict.DELIVERED:
        return {"endpointId": payload.endpoint_id, "httpStatus": outcome.status, "attempts": context.attempt}
    description = outcome.error or f"HTTP {outcome.status}"
    if verdict is HttpVerdict.GONE:
        raise PermanentJobError(f"endpoint is gone ({description}); not retrying")
    if verdict is HttpVerdict.RETRY:
        retry_after = parse_retry_after(outcome.retry_after)
        if outcome.status in _BACK_PRESSURE and retry_after:
            raise RetryLater(
                retry_after, reason=f"{description} with Retry-After: deliveries to this URL wait", pause=True
            )
        raise RetryableJobError(f"delivery failed: {description}", retry_after=retry_after)
    raise PermanentJobError(f"endpoint refused the delivery: {description}")


def classify(outcome: "HttpOutcome") -> HttpVerdict:
    """What came back, read as a verdict."""
    status = outcome.status
    if status is None:
        return HttpVerdict.RETRY
    if 200 <= status < 300:
        return HttpVerdict.DELIVERED
    if status == 410:
        return HttpVerdict.GONE
    if status in (408, 429) or status >= 500:
        return HttpVerdict.RETRY
    return HttpVerdict.PERMANENT


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), capped at an hour."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, min(seconds, float(MAX_RETRY_AFTER_SECONDS)))


def _timeouts(context: JobContext) -> tuple[float, float, float]:
    """Connect, per-read and total timeouts: the usual ones, shortened to what the invocation has left.

    The total is what keeps the batch alive: the exchange ends within it whatever the receiver does."""
    budget = (context.remaining_ms() - _RESERVED_MS) / 1000
    if budget < 1:
        raise RetryableJobError("not enough time left in this invocation to deliver")
    from lambdas.jobs import webhook_http  # as in `run`: the API function loads this module, never delivers

    total = min(webhook_http.TOTAL_TIMEOUT_SECONDS, budget)
    connect = min(webhook_http.CONNECT_TIMEOUT_SECONDS, total / 2)
    return connect, min(webhook_http.READ_TIMEOUT_SECONDS, total - connect), total


class _Attempt:
    """Writes this attempt's line in the delivery log."""

    def __init__(self, payload: WebhookDeliveryPayload, context: JobContext, event_type: str):
        self._payload = payload
        self._context = context
        self._event_type = event_type
        self._started = time.time()

    def outcome_of(self, verdict: HttpVerdict) -> DeliveryOutcome:
        if verdict is HttpVerdict.DELIVERED:
            return DeliveryOutcome.DELIVERED
        # The lifecycle kills a job whose last attempt failed; the log says so rather than "retry".
        if verdict is HttpVerdict.RETRY and self._context.attempt < self._context.max_attempts:
            return DeliveryOutcome.RETRY
        return DeliveryOutcome.FAILED

    def record(
        self,
        outcome: DeliveryOutcome,
        *,
        http_status: int | None = None,
        latency_ms: int = 0,
        error: str | None = None,
        response: str | None = None,
    ) -> None:
        assert self._context.parent_id is not None
        entry = DeliveryAttempt(
            fanout_id=self._context.parent_id,
            delivery_id=self._context.job_id,
            endpoint_id=self._payload.endpoint_id,
            event_type=self._event_type,
            attempt=self._context.attempt,
            attempted_at=iso_time(self._started),
            outcome=outcome,
            latency_ms=latency_ms,
            http_status=http_status,
            error=error,
            response=response,
        )
        try:
            self._context.record_delivery(entry)
        except Exception:
            # The delivery itself happened (or not) regardless; failing the job here would re-send it.
            logger.exception("could not record the delivery attempt", deliveryId=self._context.job_id)


JOB_TYPE = JobType(
    name=DELIVERY_TYPE,
    payload_model=WebhookDeliveryPayload,
    run=run,
    public=False,
    # A receiver sees at most this many deliveries at once (CDK context webhookHostConcurrency).
    limits=Limit(concurrency=config.WEBHOOK_HOST_CONCURRENCY, key=LimitKey.HOST),
    retry=OUTAGE_RETRIES,
    uses=frozenset({Capability.WEBHOOK_SIGNING, Capability.DELIVERY_LOG}),
)
