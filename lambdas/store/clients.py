"""Lazily created boto3 clients.

No module creates a client at import time: moto (and the local runtime's endpoint) must be in place
before the first client exists, and tests reset the cache between cases. Clients are shared by the
worker's threads (boto3 clients are thread-safe; creating them is not), hence the lock.
"""

import threading
from typing import Any

import boto3
from botocore.config import Config

_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)
_clients: dict[str, Any] = {}
_lock = threading.Lock()


def client(service: str) -> Any:
    """Return the process-wide client for `service` (endpoint taken from the AWS_ENDPOINT_URL* env)."""
    found = _clients.get(service)
    if found is not None:
        return found
    with _lock:
        if service not in _clients:
            _clients[service] = boto3.session.Session().client(service, config=_CONFIG)
        return _clients[service]


def reset() -> None:
    """Forget every client, so the next call builds one against the current environment."""
    with _lock:
        _clients.clear()
