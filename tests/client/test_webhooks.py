"""webhooks.verify against deliveries signed by the Standard Webhooks reference library."""

import base64
import json
import time

import pytest
from offload_client.webhooks import InvalidWebhook, verify
from standardwebhooks.webhooks import Webhook

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()
BODY = json.dumps({"eventType": "order.paid", "data": {"id": 7}})


def _headers(secret: str, at: int, message_id: str = "msg-1") -> dict[str, str]:
    signature = Webhook(secret).sign(message_id, _datetime(at), BODY)
    return {"Webhook-Id": message_id, "Webhook-Timestamp": str(at), "Webhook-Signature": signature}


def _datetime(at: int):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC)


def test_a_signed_delivery_returns_its_event() -> None:
    now = int(time.time())
    assert verify(SECRET, _headers(SECRET, now), BODY.encode()) == {
        "eventType": "order.paid",
        "data": {"id": 7},
    }


def test_one_matching_signature_among_several_is_enough() -> None:
    """Seen to fail when only the first `v1,` entry was compared."""
    now = int(time.time())
    headers = _headers(SECRET, now)
    headers["Webhook-Signature"] = (
        f"{_headers(OTHER, now)['Webhook-Signature']} {headers['Webhook-Signature']}"
    )
    assert verify(SECRET, headers, BODY)["data"] == {"id": 7}


def test_a_wrong_signature_or_a_changed_body_is_refused() -> None:
    """Seen to fail with the compare_digest result ignored."""
    now = int(time.time())
    with pytest.raises(InvalidWebhook, match="no webhook-signature matches"):
        verify(SECRET, _headers(OTHER, now), BODY)
    with pytest.raises(InvalidWebhook, match="no webhook-signature matches"):
        verify(SECRET, _headers(SECRET, now), BODY.replace("7", "8"))


@pytest.mark.parametrize("offset", [-301, 301])
def test_a_timestamp_outside_the_tolerance_is_refused(offset: int) -> None:
    """Seen to fail with the tolerance check removed (a replay of an old delivery passed)."""
    now = int(time.time())
    with pytest.raises(InvalidWebhook, match="from now"):
        verify(SECRET, _headers(SECRET, now + offset), BODY, now=now)
    assert verify(SECRET, _headers(SECRET, now + offset), BODY, now=now, tolerance=400)


def test_missing_headers_are_refused() -> None:
    with pytest.raises(InvalidWebhook, match="missing"):
        verify(SECRET, {}, BODY)
