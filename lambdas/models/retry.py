"""A job type's retry policy: how many attempts, how far apart, and for how long in all.

A type declares one (`JobType.retry`); CDK context `retryPolicies` overrides it per stack, field by
field (`{"send_email": {"attempts": 25, "windowSeconds": 259200}}`), checked at synth and again when a
function starts. A field left unset is the stack's: `maxAttempts` defaults to 5, the backoff to
`backoffBaseSeconds`/`backoffCapSeconds`, and no window (attempts alone bound the retries), so a type
that declares nothing retries exactly as every type did before policies existed.
"""

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from lambdas import config

# The wire (context, environment) name of each field.
WIRE_NAMES: Final = {
    "attempts": "attempts",
    "backoffBaseSeconds": "backoff_base_seconds",
    "backoffCapSeconds": "backoff_cap_seconds",
    "windowSeconds": "window_seconds",
}


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int | None = None
    backoff_base_seconds: float | None = None
    backoff_cap_seconds: float | None = None
    # From the job's first failed attempt: a retry never starts later than this, and a failure after it
    # ends the job `dead`, saying so.
    window_seconds: int | None = None

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise ValueError("; ".join(problems))

    def _problems(self) -> Iterator[str]:
        if self.attempts is not None and not 1 <= self.attempts <= config.MAX_POLICY_ATTEMPTS:
            yield f"attempts must be 1..{config.MAX_POLICY_ATTEMPTS}"
        most = config.MAX_RETRY_WINDOW_SECONDS
        base, cap = self.backoff_base_seconds, self.backoff_cap_seconds
        if base is not None and not config.MIN_BACKOFF_SECONDS <= base <= most:
            yield f"backoffBaseSeconds must be {config.MIN_BACKOFF_SECONDS}..{most}"
        if cap is not None and not (base or config.MIN_BACKOFF_SECONDS) <= cap <= most:
            yield f"backoffCapSeconds must be backoffBaseSeconds..{most}"
        if self.window_seconds is not None and not 1 <= self.window_seconds <= most:
            yield f"windowSeconds must be 1..{most} (7 days)"

    def overridden(self, fields: dict[str, Any]) -> "RetryPolicy":
        """This policy with the fields an override names (by their wire names) replaced."""
        unknown = sorted(set(fields) - set(WIRE_NAMES))
        if unknown:
            raise ValueError(f"unknown field {', '.join(unknown)} (fields: {', '.join(WIRE_NAMES)})")
        changes: dict[str, Any] = {}
        for wire, value in fields.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{wire} must be a number")
            changes[WIRE_NAMES[wire]] = int(value) if wire in ("attempts", "windowSeconds") else value
        return dataclasses.replace(self, **changes)


# The built-in types that call someone else's service (SES, a client's webhook receiver): 25 attempts,
# as Sidekiq makes, the first as quick as any type's, later ones up to 6 hours apart, within 3 days in
# all: 42 hours of retries on average, 31 or more for 19 jobs in 20, so a day-long outage is outlasted.
OUTAGE_RETRIES: Final = RetryPolicy(attempts=25, backoff_cap_seconds=6 * 3600, window_seconds=3 * 86_400)


def parse_overrides(raw: Any) -> dict[str, dict[str, Any]]:
    """`retryPolicies` (a JSON object keyed by job type, each an object of policy fields): each checked,
    ValueError naming the type and field otherwise."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, dict):
        raise ValueError("retryPolicies is a JSON object keyed by job type")
    checked: dict[str, dict[str, Any]] = {}
    for job_type, fields in raw.items():
        if not isinstance(fields, dict):
            raise ValueError(f"retryPolicies.{job_type} is an object of {', '.join(WIRE_NAMES)}")
        try:
            RetryPolicy().overridden(fields)
        except ValueError as error:
            raise ValueError(f"retryPolicies.{job_type}: {error}") from None
        checked[str(job_type)] = dict(fields)
    return checked
