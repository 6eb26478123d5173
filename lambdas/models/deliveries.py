"""One line of the webhook delivery log: what a delivery attempt did, whatever its outcome."""

from dataclasses import dataclass
from enum import StrEnum


class DeliveryOutcome(StrEnum):
    DELIVERED = "delivered"
    RETRY = "retry"  # failed, and the job will try again
    FAILED = "failed"  # failed for good: refused, gone, or the last attempt


@dataclass(frozen=True)
class DeliveryAttempt:
    fanout_id: str
    delivery_id: str
    endpoint_id: str
    event_type: str
    attempt: int
    attempted_at: str  # ISO-8601, UTC
    outcome: DeliveryOutcome
    latency_ms: int
    http_status: int | None = None
    error: str | None = None
    response: str | None = None  # the first RESPONSE_EXCERPT_BYTES of the response body
