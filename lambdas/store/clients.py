"""Lazily created boto3 clients.

No module creates a client at import time: moto (and the local runtime's endpoint) must be in place
before the first client exists, and tests reset the cache between cases.
"""

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)


@cache
def client(service: str) -> Any:
    """Return the process-wide client for `service` (endpoint taken from the AWS_ENDPOINT_URL* env)."""
    return boto3.session.Session().client(service, config=_CONFIG)  # type: ignore[call-overload]


def reset() -> None:
    """Forget every client, so the next call builds one against the current environment."""
    client.cache_clear()
