"""Signatures checked by the reference implementation (the `standardwebhooks` package), not by ours."""

import base64
import json
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from lambdas.jobs import webhook_signing

KEY = bytes(range(32))
SECRET = "whsec_" + base64.b64encode(KEY).decode()
BODY = json.dumps({"event": "invoice.paid", "data": {"id": "in_1", "total": 4200}, "timestamp": "x"}).encode()


def _signed(body: bytes = BODY, timestamp: int | None = None, message_id: str = "8b0c3a57") -> dict[str, str]:
    when = int(time.time()) if timestamp is None else timestamp
    return webhook_signing.headers([webhook_signing.signing_key(SECRET)], message_id, when, body)


def test_a_receiver_using_the_reference_library_accepts_the_delivery():
    assert Webhook(SECRET).verify(BODY, _signed()) == json.loads(BODY)


def test_non_ascii_bodies_verify_too():
    body = json.dumps({"event": "e", "data": {"name": "Zoë, ünïcode ✓ 日本"}}, ensure_ascii=False).encode()
    assert Webhook(SECRET).verify(body, _signed(body))["data"]["name"] == "Zoë, ünïcode ✓ 日本"


def test_a_tampered_body_is_refused():
    tampered = BODY.replace(b"4200", b"1")
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(tampered, _signed())


def test_a_stale_timestamp_is_refused():
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(SECRET).verify(BODY, _signed(timestamp=int(time.time()) - 3600))


def test_a_different_message_id_is_refused():
    headers = _signed()
    headers["webhook-id"] = "someone-else"
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(BODY, headers)


def test_a_different_secret_is_refused():
    other = "whsec_" + base64.b64encode(bytes(32)).decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(BODY, _signed())


def test_header_shape():
    headers = _signed(timestamp=1_700_000_000, message_id="msg_1")
    assert headers["webhook-id"] == "msg_1"
    assert headers["webhook-timestamp"] == "1700000000"
    version, signature = headers["webhook-signature"].split(",", 1)
    assert version == "v1"
    assert len(base64.b64decode(signature)) == 32  # HMAC-SHA256


def test_a_secret_stored_without_prefix_means_the_same_key():
    bare = base64.b64encode(KEY).decode()
    assert webhook_signing.signing_key(bare) == webhook_signing.signing_key(SECRET) == KEY
    # A generated 32-character alphanumeric secret is valid base64 as it stands.
    generated = "Zq3LmN8pRt5VwX2yA7bC9dE4fG6hJ1kM"
    headers = webhook_signing.headers([webhook_signing.signing_key(generated)], "m", int(time.time()), BODY)
    assert Webhook(generated).verify(BODY, headers)


@pytest.mark.parametrize("secret", ["whsec_", "whsec_c2hvcnQ=", "not base64 at all!", "whsec_a"])
def test_unusable_secrets_are_refused(secret):
    with pytest.raises(webhook_signing.InvalidSecretError):
        webhook_signing.signing_key(secret)


def test_signed_with_two_secrets_a_receiver_holding_either_verifies():
    """A rotation's overlap: one `v1,` signature per secret, separated by a space (Standard Webhooks).
    Seen to fail with `headers` joining only the first key's signature (the old secret's receiver refuses)."""
    old = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()
    keys = [webhook_signing.signing_key(SECRET), webhook_signing.signing_key(old)]
    headers = webhook_signing.headers(keys, "m", int(time.time()), BODY)

    assert len(headers["webhook-signature"].split(" ")) == 2
    assert Webhook(SECRET).verify(BODY, headers) == Webhook(old).verify(BODY, headers) == json.loads(BODY)
    stranger = "whsec_" + base64.b64encode(bytes(32)).decode()
    with pytest.raises(WebhookVerificationError):
        Webhook(stranger).verify(BODY, headers)
