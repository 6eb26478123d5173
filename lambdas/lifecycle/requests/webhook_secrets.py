"""Each client's webhook signing secrets: handed out per key, rotated by the operator with an overlap.

- A client's secrets are made on first use (its first delivery, or its first `GET /webhook-secret`):
  32 random bytes, `whsec_<base64>`. On an upgraded stack, a client that existed before the upgrade
  (`webhook_secrets_start_shared` names it) starts instead with the stack-wide one its receivers already
  hold, so nothing breaks until the operator rotates that client; any other client gets its own.
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
from lambdas.redaction import remember
from lambdas.store.webhook_secrets import WebhookSecretStore

_SECRET_BYTES = 32
# Concurrent first uses or rotations of one client: each loser reads again, a bounded number of times.
_WRITE_TRIES = 5


def _remembered(secrets: ClientSecrets) -> ClientSecrets:
    """Secrets this process now holds: redacted from its logs and from what its jobs write."""
    remember(secrets.current, *(retired.secret for retired in secrets.previous))
    return secrets


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
    def __init__(
        self,
        store: WebhookSecretStore,
        first_secret: Callable[[], str] = new_secret,
        shared: frozenset[str] = frozenset(),
    ) -> None:
        """`first_secret`: the first secret of the `shared` clients (the stack-wide one); any other
        client's is `new_secret`'s."""
        self._store = store
        self._first_secret = first_secret
        self._shared = shared

    @staticmethod
    def now() -> float:
        return time.time()

    def of(self, client: str) -> ClientSecrets:
        """The client's secrets, made on first use (once, however many ask at the same time)."""
        for _ in range(_WRITE_TRIES):
            found = self._store.get(client)
            if found is not None:
                return _remembered(found)
            made = ClientSecrets(client=client, current=self._first(client))
            if self._store.create(made):
                return _remembered(made)
        raise ConcurrentRotationError(f"the webhook secrets of {client} could not be read")

    def _first(self, client: str) -> str:
        return self._first_secret() if client in self._shared else new_secret()

    def signs_with_stack_wide(self, secrets: ClientSecrets, now: float) -> bool:
        """Whether the client still signs with the stack-wide secret: only a shared client can, until
        its rotation's overlap ends (the stack-wide secret is read only then)."""
        if secrets.client not in self._shared:
            return False
        return self._first_secret() in secrets.signing(now)

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
                return _remembered(rotated)
        raise ConcurrentRotationError(f"the webhook secrets of {client} changed during every try to rotate")


def webhook_secrets(settings: WebhookSecretsSettings) -> WebhookSecrets:
    """The function's secrets; on an upgraded stack, the first secret of a client that existed before
    the upgrade is the stack-wide one."""
    return WebhookSecrets(
        WebhookSecretStore(settings.webhook_secrets_table),
        functools.partial(_stack_wide_secret, settings.webhook_secret_arn),
        frozenset(settings.webhook_secrets_start_shared),
    )


def _stack_wide_secret(arn: str) -> str:
    # Imported on first use: only an upgraded stack's first uses read it, and it costs cold-start time.
    from aws_lambda_powertools.utilities import parameters

    return parameters.get_secret(arn, max_age=300)
