"""Flow-control limits of a job type, and what a job waiting on one shows.

A limit bounds how many of one type's jobs run at once (`concurrency`), how fast they start
(`perSecond`, with `burst` starts allowed at once), or both; `key` splits it into one limit per value:
none (the whole type), `owner` (per client), `host` (per webhook host: the host and port of the
payload's `url`) or `payload.<field>` (a top-level payload field, e.g. a customer id).
"""

import re
from enum import StrEnum
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lambdas.models.waiting import LimitKind, WaitingFor
from lambdas.models.wire import WireModel

__all__ = ["Limit", "LimitKey", "LimitKind", "WaitingFor"]


class LimitKey(StrEnum):
    """The fixed kinds of a limit's key; the open one is `PAYLOAD` followed by a field's name."""

    NONE = ""  # one limit for the whole type
    OWNER = "owner"
    HOST = "host"
    PAYLOAD = "payload."


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
            raise ValueError(f"jobLimits.{job_type} is an object of concurrency, perSecond, burst, key")
        Limit().overridden(fields)  # raises ValidationError naming the bad field
        checked[str(job_type)] = dict(fields)
    return checked


class LimitKeyView(WireModel):
    key: str = Field(description="The key's value (* for a limit of the whole type).")
    running: int = Field(description="Slots held by running jobs (unexpired leases).")
    tokens: float | None = Field(default=None, description="Starts available now (perSecond limits).")
    paused_until: str | None = Field(
        default=None, description="A receiver's Retry-After pause, while it lasts."
    )
    waiting: int = Field(description="Jobs refused by this key lately and waiting to try again.")


class LimitView(WireModel):
    type: str
    concurrency: int | None = None
    per_second: float | None = None
    burst: int | None = None
    key: str = Field(description="none (empty), owner, host or payload.<field>.")
    keys: list[LimitKeyView] = Field(description="Each key in use, as it stands now.")


class LimitsView(WireModel):
    limits: list[LimitView]
