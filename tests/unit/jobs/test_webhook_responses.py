"""How a delivery reads the endpoint's answer."""

import email.utils

import pytest

from lambdas.jobs.types.webhook_delivery import classify, parse_retry_after
from lambdas.jobs.webhook_http import HttpOutcome


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (200, "delivered"),
        (201, "delivered"),
        (204, "delivered"),
        (410, "gone"),
        (429, "retry"),
        (408, "retry"),
        (500, "retry"),
        (502, "retry"),
        (503, "retry"),
        (400, "permanent"),
        (401, "permanent"),
        (404, "permanent"),
        (413, "permanent"),
        (301, "permanent"),  # redirects are not followed
        (302, "permanent"),
        (307, "permanent"),
    ],
)
def test_status_codes(status, verdict):
    assert classify(HttpOutcome(latency_ms=1, status=status)) == verdict


@pytest.mark.parametrize("error", ["timeout: ReadTimeoutError", "connection: ConnectionRefusedError"])
def test_no_response_is_retried(error):
    assert classify(HttpOutcome(latency_ms=1, error=error)) == "retry"


def test_retry_after_in_seconds():
    assert parse_retry_after("120") == 120
    assert parse_retry_after(" 0 ") == 0


def test_retry_after_as_http_date():
    now = 1_700_000_000.0
    header = email.utils.formatdate(now + 90, usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(90)
    assert parse_retry_after(email.utils.formatdate(now - 90, usegmt=True), now=now) == 0


def test_retry_after_is_capped_and_garbage_ignored():
    assert parse_retry_after("999999") == 3600
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-5") is None
    assert parse_retry_after(None) is None
