"""Each client's webhook signing secrets: handed out per key, rotated by the operator with an overlap.

- A client's secrets are made on first use (its first delivery, or its first `GET /webhook-secret`):
  32 random bytes, `whsec_<base64>`. On an upgraded stack (`webhook_secrets_start_shared`) the first
  secret is instead the stack-wide one every receiver already holds, so nothing breaks until the
  operator rotates that client.
- A rotation makes a new current secret; the one it replaces keeps signing beside it for
  `WEBHOOK_SECRET_OVERLAP_SECONDS` (24 h), so receivers can switch at any time in that window.
- A client reads only its own secrets (`ForbiddenError` for another's); the operator reads any client's
  and alone rotates.
"""

import base64
import functools
import secrets as random
import time
from collections.abc import Callable

from lambdas import config
from lambdas.lifecycle.errors import ConcurrentRotationError, ForbiddenError
from lambdas.models.caller import Caller
from lambdas.models.settings import WebhookSecretsSettings
from lambdas.models.webhook_secrets import SECRET_PREFIX, ClientSecrets, RetiredSecret
from lambdas.store.webhook_secrets import WebhookSecretStore

_SECRET_BYTES = 32
# Concurrent first uses or rotations of one client: each loser reads again, a bounded number of times.
_WRITE_TRIES = 5


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(random.token_bytes(_SECRET_BYTES)).decode("ascii")


def client_of(caller: Caller, asked: str | None) -> str:
    """Whose secret a caller may read: its own; the operator may name any client."""
    if not caller.names(asked):
        raise ForbiddenError("a client's key reads its own webhook secret only")
    return asked or caller.owner


def require_operator(caller: Caller) -> None:
    if not caller.operator:
        raise ForbiddenError("only the operator's key rotates webhook secrets")


class WebhookSecrets:
    def __init__(self, store: WebhookSecretStore, first_secret: Callable[[], str] = new_secret) -> None:
        self._store = store
        self._first_secret = first_secret

    @staticmethod
    def now() -> float:
        return time.time()

    def of(self, client: str) -> ClientSecrets:
        """The client's secrets, made on first use (once, however many ask at the same time)."""
        for _ in range(_WRITE_TRIES):
            found = self._store.get(client)
            if found is not None:
                return found
            made = ClientSecrets(client=client, current=self._first_secret())
            if self._store.create(made):
                return made
        raise ConcurrentRotationError(f"the webhook secrets of {client} could not be read")

    def rotate(self, client: str) -> ClientSecrets:
        """A new current secret; the replaced one still signs for the overlap, expired ones are dropped."""
        for _ in range(_WRITE_TRIES):
            found = self.of(client)
            now = float(int(self.now()))  # whole seconds, as stored: a later read answers the same times
            retired = RetiredSecret(found.current, now + config.WEBHOOK_SECRET_OVERLAP_SECONDS)
            rotated = ClientSecrets(
                client=client,
                current=new_secret(),
                previous=(retired, *found.still_valid(now)),
                rotated_at=now,
                version=found.version + 1,
            )
            if self._store.replace(rotated, found.version):
                return rotated
        raise ConcurrentRotationError(f"the webhook secrets of {client} changed during every try to rotate")


def webhook_secrets(settings: WebhookSecretsSettings) -> WebhookSecrets:
    """The function's secrets; first secrets are the stack-wide one on an upgraded stack."""
    first = (
        functools.partial(_stack_wide_secret, settings.webhook_secret_arn)
        if settings.webhook_secrets_start_shared
        else new_secret
    )
    return WebhookSecrets(WebhookSecretStore(settings.webhook_secrets_table), first)


def _stack_wide_secret(arn: str) -> str:
    # Imported on first use: only an upgraded stack's first uses read it, and it costs cold-start time.
    from aws_lambda_powertools.utilities import parameters

    return parameters.get_secret(arn, max_age=300)
