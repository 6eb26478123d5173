"""offload's Python client: submit, follow and act on jobs, and verify offload's webhooks (sync only)."""

from offload_client.client import Client
from offload_client.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    OffloadError,
    RateLimited,
    Unreachable,
    WaitTimeout,
)
from offload_client.models import (
    Child,
    Delivery,
    EventAccepted,
    Job,
    JobSummary,
    Limit,
    Schedule,
    Stats,
    Submitted,
    WebhookSecret,
)

__all__ = [
    "ApiError",
    "Child",
    "Client",
    "Conflict",
    "Delivery",
    "EventAccepted",
    "Forbidden",
    "InvalidRequest",
    "Job",
    "JobSummary",
    "Limit",
    "NotFound",
    "OffloadError",
    "RateLimited",
    "Schedule",
    "Stats",
    "Submitted",
    "Unreachable",
    "WaitTimeout",
    "WebhookSecret",
]
