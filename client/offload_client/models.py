"""Typed results: one dataclass per response schema of docs/openapi.json, fields in snake_case.

A test (client/tests/test_models.py) holds each dataclass's fields to its schema's properties, so the
client cannot drift from the API. `raw` keeps the document as the API sent it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Self

from offload_client.errors import IncompleteAnswer

TERMINAL = frozenset({"done", "dead", "cancelled"})  # the states a job never leaves on its own


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def required(model: type) -> list[str]:
    """The fields of a result that are not optional (`X | None`, `Any`): those its answer must carry."""
    return [
        f.name for f in fields(model) if f.name != "raw" and "None" not in str(f.type) and f.type != "Any"
    ]


class _FromApi:
    @classmethod
    def from_api(cls, document: dict[str, Any]) -> Self:
        """Fields the API sent; absent optional ones None; keys this client does not know are kept in raw.
        IncompleteAnswer when a field that is not optional here (the schema requires it) is absent."""
        if not isinstance(document, dict):
            raise IncompleteAnswer(
                200, None, f"answered {type(document).__name__}, not a {cls.__name__} object"
            )
        missing = [camel(name) for name in required(cls) if document.get(camel(name)) is None]
        if missing:
            raise IncompleteAnswer(
                200, None, f"answered a {cls.__name__} without its documented {', '.join(missing)}"
            )
        values: dict[str, Any] = {f.name: document.get(camel(f.name)) for f in fields(cls) if f.name != "raw"}  # type: ignore[arg-type]
        values["raw"] = document
        return cls(**values)


@dataclass(frozen=True)
class Submitted(_FromApi):
    """SubmitJobResponse."""

    job_id: str
    status: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class JobSummary(_FromApi):
    """JobSummary: one entry of `GET /jobs`."""

    job_id: str
    type: str
    status: str
    attempts: int
    max_attempts: int
    created_at: str
    updated_at: str
    status_at: str
    last_error: str | None
    parent_id: str | None
    priority: str  # "high", "normal" or "low"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Job(_FromApi):
    """JobView: `GET /jobs/{jobId}`, and the answer of retry and cancel."""

    job_id: str
    type: str
    status: str
    payload: dict[str, Any] | None
    attempts: int
    max_attempts: int
    last_error: str | None
    result: Any
    created_at: str
    updated_at: str
    status_at: str
    next_attempt_at: str | None
    run_at: str | None
    parent_id: str | None
    waiting_for: dict[str, Any] | None
    children: dict[str, Any] | None
    downloads: list[dict[str, Any]] | None
    history: list[dict[str, Any]] | None
    allowed_actions: list[str] | None  # "retry", "cancel": what the server allows now (None: an older one)
    priority: str  # "high", "normal" or "low"
    steps: list[dict[str, Any]] | None = None  # a workflow's (None: a plain job)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class EventAccepted(_FromApi):
    """EventAccepted: `POST /jobs/{jobId}/events`, the waiting workflow goes on with the event."""

    job_id: str
    name: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Schedule(_FromApi):
    """ScheduleView: a recurring schedule, its next fire times and the jobs of its last firings."""

    schedule_id: str
    owner: str
    name: str
    expression: str
    time_zone: str
    job: dict[str, Any]
    overlap: str
    state: str
    created_at: str
    next_fire_times: list[str]
    last_jobs: list[dict[str, Any]]
    failing: bool
    last_error: str | None
    last_error_at: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Child(_FromApi):
    """ChildSummary: one delivery child of a fan-out."""

    job_id: str
    endpoint_id: str
    url: str
    status: str
    attempts: int
    last_error: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Delivery(_FromApi):
    """DeliveryView: one attempt to deliver a webhook."""

    delivery_id: str
    endpoint_id: str
    attempt: int
    attempted_at: str
    outcome: str
    http_status: int | None
    latency_ms: int
    response: str | None
    error: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Limit(_FromApi):
    """LimitView: one job type's flow-control limit and its keys in use (`GET /limits`)."""

    type: str
    concurrency: int | None
    per_second: float | None
    burst: int | None
    key: str
    scope: str
    keys: list[dict[str, Any]]
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Stats(_FromApi):
    """StatsView: `GET /stats`."""

    statuses: dict[str, Any]
    types: dict[str, Any]
    queue: dict[str, Any]
    dead_letter_queue: dict[str, Any]
    finished_per_minute: list[dict[str, Any]]
    more: bool
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class WebhookSecret(_FromApi):
    """WebhookSecretView: `GET /webhook-secret`, the `whsec_...` secret a client's receivers verify with."""

    client: str
    secret: str
    rotated_at: str | None
    previous_valid_until: str | None
    signs_with_stack_wide_secret: bool | None  # None: an older server
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
