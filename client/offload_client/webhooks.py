"""Verify a webhook offload delivered (Standard Webhooks: https://www.standardwebhooks.com/).

`verify(secret, headers, body)` returns the event (the JSON body) only when
- `webhook-signature` holds at least one `v1,<base64 HMAC-SHA256>` (space-separated; several are
  allowed, so a secret can be rotated) that matches `f"{webhook-id}.{webhook-timestamp}.{body}"`
  under the key the secret encodes (base64 after an optional `whsec_` prefix), compared in constant time;
- `webhook-timestamp` is within `tolerance` seconds of now (either way), so an old delivery cannot be
  replayed.
Anything else raises `InvalidWebhook`. Drop duplicates by `webhook-id`: a retried delivery keeps it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

TOLERANCE_SECONDS = 300
SECRET_PREFIX = "whsec_"  # noqa: S105 - a format prefix, not a secret


class InvalidWebhook(ValueError):
    """The delivery is not offload's, or too old or too new to trust."""


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> Any:
    raw = body.encode() if isinstance(body, str) else body
    named = {name.lower(): value for name, value in headers.items()}
    message_id = named.get("webhook-id")
    stamp = named.get("webhook-timestamp")
    signatures = named.get("webhook-signature")
    if not (message_id and stamp and signatures):
        raise InvalidWebhook("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise InvalidWebhook("webhook-timestamp is not integer seconds") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise InvalidWebhook(f"webhook-timestamp is more than {tolerance:g} s from now")
    signed = b".".join((message_id.encode(), stamp.encode(), raw))
    expected = base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()
    offered = [part.split(",", 1)[1] for part in signatures.split() if part.startswith("v1,")]
    if not any(hmac.compare_digest(expected, candidate) for candidate in offered):
        raise InvalidWebhook("no webhook-signature matches")
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidWebhook("the body is not JSON") from None


def _key(secret: str) -> bytes:
    encoded = secret.strip().removeprefix(SECRET_PREFIX)
    try:
        return base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the webhook secret is not base64 (with an optional whsec_ prefix)") from None
