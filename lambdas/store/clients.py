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
# Presigned S3 URLs must be SigV4 (SigV2 is what botocore still presigns with by default, and newer
# regions and SSE-KMS objects refuse it).
_SERVICE_CONFIG = {"s3": Config(signature_version="s3v4")}
_clients: dict[str, Any] = {}
# One session for all of them: each botocore session loads its own endpoint rules and service index
# (time a first invocation pays again for each client created from a fresh session).
_session: list[boto3.session.Session] = []
_lock = threading.Lock()


def client(service: str) -> Any:
    """Return the process-wide client for `service` (endpoint taken from the AWS_ENDPOINT_URL* env)."""
    found = _clients.get(service)
    if found is not None:
        return found
    with _lock:
        if service not in _clients:
            config = _CONFIG.merge(_SERVICE_CONFIG[service]) if service in _SERVICE_CONFIG else _CONFIG
            if not _session:
                _session.append(boto3.session.Session())
            _clients[service] = _session[0].client(service, config=config)
        return _clients[service]


def reset() -> None:
    """Forget every client, so the next call builds one against the current environment."""
    with _lock:
        _clients.clear()
        _session.clear()
