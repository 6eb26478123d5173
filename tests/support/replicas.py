"""Reads that lag behind writes, as DynamoDB's eventually consistent reads may (its documented model);
moto's never do, so a test that needs a read to ask for consistency makes every other read miss."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lambdas.store import clients


@contextmanager
def replicas_lag(table: str, operation: str) -> Iterator[list[bool]]:
    """Meanwhile, each `operation` (GetItem or Query) of `table` by the store's client that does not ask
    for `ConsistentRead` finds nothing. Yields whether each such call asked (True) or not."""
    asked: list[bool] = []

    def note_consistency(params: dict[str, Any], **_: Any) -> None:
        asked.append(params["TableName"] != table or params.get("ConsistentRead") is True)

    def lag_unless_consistent(parsed: dict[str, Any], **_: Any) -> None:
        if asked[-1]:
            return
        if operation == "Query":
            parsed["Items"], parsed["Count"] = [], 0
        else:
            parsed.pop("Item", None)

    events = clients.client("dynamodb").meta.events
    events.register(f"provide-client-params.dynamodb.{operation}", note_consistency)
    events.register(f"after-call.dynamodb.{operation}", lag_unless_consistent)
    try:
        yield asked
    finally:
        events.unregister(f"provide-client-params.dynamodb.{operation}", note_consistency)
        events.unregister(f"after-call.dynamodb.{operation}", lag_unless_consistent)
