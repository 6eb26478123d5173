"""A client's webhook signing secrets (current, and rotated-out ones still valid for a while), and how
the API shows them (camelCase on the wire)."""

from dataclasses import dataclass
from typing import Self

from pydantic import Field

from lambdas.models.timestamps import iso_time
from lambdas.models.wire import WireModel

SECRET_PREFIX = "whsec_"  # noqa: S105 - the Standard Webhooks format prefix, not a secret
# An API key id as API Gateway makes them (and the local runtime's `local-...` ids).
CLIENT_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"


@dataclass(frozen=True)
class RetiredSecret:
    secret: str
    valid_until: float  # epoch seconds: it signs (beside the current one) until then


@dataclass(frozen=True)
class ClientSecrets:
    client: str  # the client's API key id: the owner recorded on its jobs
    current: str
    previous: tuple[RetiredSecret, ...] = ()
    rotated_at: float | None = None  # epoch seconds of the last rotation; None before the first
    version: int = 1  # bumped by every rotation: the store's condition against a concurrent one

    def still_valid(self, now: float) -> tuple[RetiredSecret, ...]:
        return tuple(old for old in self.previous if now < old.valid_until)

    def signing(self, now: float) -> tuple[str, ...]:
        """Every secret a delivery made at `now` is signed with: the current one first."""
        return (self.current, *(old.secret for old in self.still_valid(now)))


def with_prefix(secret: str) -> str:
    """The secret as a receiver configures it: `whsec_<base64>`."""
    return secret if secret.startswith(SECRET_PREFIX) else SECRET_PREFIX + secret


class RotateSecretRequest(WireModel):
    client: str = Field(
        pattern=CLIENT_PATTERN,
        description="The client's API key id (`ApiKeyId<Name>`), or with IAM callers its name.",
    )


class WebhookSecretView(WireModel):
    client: str = Field(
        description=(
            "The client's API key id (with IAM callers, its name); every event it submits carries it as "
            "`client` in the signed body."
        )
    )
    secret: str = Field(description="The `whsec_...` secret this client's receivers verify signatures with.")
    rotated_at: str | None = Field(
        description="When the secret was last rotated; null before the first rotation."
    )
    previous_valid_until: str | None = Field(
        description="Until when the secret rotated out last still signs too (24 h overlap); null if none does."
    )

    @classmethod
    def of(cls, secrets: ClientSecrets, now: float) -> Self:
        valid = secrets.still_valid(now)
        return cls(
            client=secrets.client,
            secret=with_prefix(secrets.current),
            rotated_at=None if secrets.rotated_at is None else iso_time(secrets.rotated_at),
            previous_valid_until=iso_time(max(old.valid_until for old in valid)) if valid else None,
        )
