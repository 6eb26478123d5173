"""Flow-control limits of a job type, and what a job waiting on one shows.

A limit bounds how many of one type's jobs run at once (`concurrency`), how fast they start
(`perSecond`, with `burst` starts allowed at once), or both; `key` splits it into one limit per value:
none (the whole type), `owner` (per client), `host` (per webhook host: the host and port of the
payload's `url`) or `payload.<field>` (a top-level payload field, e.g. a customer id). A payload key is
each client's own (`scope` `owner`: one client sending another's customer id spends only its own
starts) unless the limit says `scope` `global` (a field naming something every client shares).
"""

import re
from enum import StrEnum
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lambdas.models.waiting import LimitKind, WaitingFor
from lambdas.models.wire import WireModel

__all__ = ["Limit", "LimitKey", "LimitKind", "LimitScope", "WaitingFor"]


class LimitKey(StrEnum):
    """The fixed kinds of a limit's key; the open one is `PAYLOAD` followed by a field's name."""

    NONE = ""  # one limit for the whole type
    OWNER = "owner"
    HOST = "host"
    PAYLOAD = "payload."


class LimitScope(StrEnum):
    """Whose a `payload.<field>` key's value is."""

    OWNER = "owner"  # each client's values are its own keys
    GLOBAL = "global"  # one key per value, whichever client sends it


KEY_PATTERN: Final = re.compile(r"^(owner|host|payload\.[A-Za-z_][A-Za-z0-9_]{0,63})?$")
# The one limit key value of an unkeyed limit (a DynamoDB sort key cannot be empty).
WHOLE_TYPE: Final = "*"
MAX_KEY_CHARS: Final = 200


class Limit(BaseModel):
    """One job type's limit; `jobLimits` context overrides it field by field."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    concurrency: int | None = Field(default=None, ge=1, le=10_000)
    per_second: float | None = Field(default=None, alias="perSecond", gt=0, le=1_000)
    burst: int | None = Field(default=None, ge=1, le=10_000)
    key: str = Field(default="", description="none, owner, host or payload.<field>")
    scope: LimitScope = Field(
        default=LimitScope.OWNER, description="owner (each client's payload keys its own) or global"
    )

    @field_validator("key")
    @classmethod
    def _known_key(cls, value: str) -> str:
        if not KEY_PATTERN.fullmatch(value):
            raise ValueError("key is one of: none (empty), owner, host, payload.<field>")
        return value

    @model_validator(mode="after")
    def _burst_needs_rate(self) -> Self:
        if self.burst is not None and self.per_second is None:
            raise ValueError("burst needs perSecond")
        return self

    @property
    def active(self) -> bool:
        return self.concurrency is not None or self.per_second is not None

    @property
    def bucket(self) -> int:
        """Starts allowed at once after a quiet spell: `burst`, else one."""
        return self.burst or 1

    def overridden(self, fields: dict[str, Any]) -> "Limit":
        """This limit with the fields an override names (by their wire names) replaced."""
        merged = {**self.model_dump(by_alias=True), **fields}
        return Limit.model_validate(merged)


def parse_overrides(raw: Any) -> dict[str, dict[str, Any]]:
    """`jobLimits` (a JSON object keyed by job type, each an object of Limit fields): each checked."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, dict):
        raise ValueError("jobLimits is a JSON object keyed by job type")
    checked: dict[str, dict[str, Any]] = {}
    for job_type, fields in raw.items():
        if not isinstance(fields, dict):
            raise ValueError(
                f"jobLimits.{job_type} is an object of concurrency, perSecond, burst, key, scope"
            )
        # Each field on its own (a `perSecond` stands in for the type's): raises ValidationError naming a
        # bad one. Over the type's own limit the override is the job-type catalog's check at synth.
        Limit(per_second=1).overridden(fields)
        checked[str(job_type)] = dict(fields)
    return checked


class LimitKeyView(WireModel):
    key: str = Field(description="The key's value (* for a limit of the whole type).")
    running: int = Field(description="Slots held by running jobs (unexpired leases).")
    tokens: float | None = Field(default=None, description="Starts available now (perSecond limits).")
    paused_until: str | None = Field(
        default=None, description="A receiver's Retry-After pause, while it lasts."
    )
    waiting: int = Field(description="Starts reserved ahead for jobs this key refused (their waits).")


class LimitView(WireModel):
    type: str
    concurrency: int | None = None
    per_second: float | None = None
    burst: int | None = None
    key: str = Field(description="none (empty), owner, host or payload.<field>.")
    scope: LimitScope = Field(
        description="A payload key's: owner (each client's values its own keys, shown as owner|value) or global."
    )
    keys: list[LimitKeyView] = Field(description="This page's keys in use, as they stand now.")


class LimitsView(WireModel):
    limits: list[LimitView]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last.")
