"""Recording what the functions' boto3 clients put on the wire, through botocore's event hooks."""

from typing import Any

from lambdas.store import clients


def record_params(service: str, operation: str) -> list[dict[str, Any]]:
    """A list that receives the parameters of every `operation` call the cached `service` client makes."""
    seen: list[dict[str, Any]] = []
    clients.client(service).meta.events.register(
        f"provide-client-params.{service}.{operation}", lambda params, **_: seen.append(dict(params))
    )
    return seen
