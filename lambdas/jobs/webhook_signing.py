"""Standard Webhooks signatures (https://www.standardwebhooks.com/).

A delivery carries three headers:

- `webhook-id`: the delivery's id, the same on every retry, so a receiver can drop duplicates;
- `webhook-timestamp`: when this attempt was signed, in integer seconds since the epoch;
- `webhook-signature`: `v1,` followed by base64(HMAC-SHA256(key, f"{id}.{timestamp}.{body}")), once
  per key, separated by spaces: during a rotation's overlap a delivery is signed with the new secret and
  the one it replaced, and a receiver holding either verifies it.

The key is the base64 text of the secret after its `whsec_` prefix. Each client has its own secrets
(`lambdas.lifecycle.requests.webhook_secrets`); a value is `whsec_<base64>` or just the base64 part (the
stack-wide secret of an upgraded stack: 48 letters and digits), and a receiver configures the same string.
"""

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

from lambdas.models.webhook_secrets import SECRET_PREFIX

MIN_KEY_BYTES = 24


class InvalidSecretError(ValueError):
    pass


def signing_key(secret: str) -> bytes:
    """The HMAC key behind a `whsec_` (or bare base64) secret."""
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSecretError("webhook secret is not base64 (with an optional whsec_ prefix)") from None
    if len(key) < MIN_KEY_BYTES:
        raise InvalidSecretError(f"webhook secret must hold at least {MIN_KEY_BYTES} bytes")
    return key


def sign(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    signed = b".".join((message_id.encode(), str(timestamp).encode(), body))
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(keys: Sequence[bytes], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(key, message_id, timestamp, body) for key in keys),
    }
