"""BatchGetItem and BatchWriteItem until DynamoDB has processed every key or item.

Both calls may leave part of a request unprocessed (throttling, size limits) without raising; AWS asks
callers to send that part again with exponential backoff. After `MAX_ROUNDS` the leftovers raise
`UnprocessedError` rather than keep a function busy until its timeout.
"""

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lambdas.store.errors import StoreError

GET_LIMIT = 100
WRITE_LIMIT = 25
MAX_ROUNDS = 8
FIRST_BACKOFF_SECONDS = 0.05
_MAX_BACKOFF_SECONDS = 1.0


class UnprocessedError(StoreError):
    """DynamoDB kept refusing part of a batch; the caller's attempt should be retried later."""


def get_all(
    ddb: Any,
    table: str,
    keys: Sequence[dict[str, Any]],
    projection: str | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """The items found for `keys` (consistent reads), projected to `projection` (whole items if None)."""
    for chunk in _chunks(keys, GET_LIMIT):
        request: dict[str, Any] = {table: {"Keys": chunk, "ConsistentRead": True}}
        if projection:
            request[table]["ProjectionExpression"] = projection
        for response in _until_processed(ddb.batch_get_item, request, "UnprocessedKeys", sleep):
            yield from response["Responses"].get(table, [])


def put_all(
    ddb: Any, table: str, items: Sequence[dict[str, Any]], sleep: Callable[[float], None] | None = None
) -> None:
    """Put every (marshalled) item; unconditional, as BatchWriteItem is."""
    for chunk in _chunks(items, WRITE_LIMIT):
        request = {table: [{"PutRequest": {"Item": item}} for item in chunk]}
        for _ in _until_processed(ddb.batch_write_item, request, "UnprocessedItems", sleep):
            pass


def _chunks(values: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _until_processed(
    call: Callable[..., dict[str, Any]],
    request: dict[str, Any],
    leftover_field: str,
    sleep: Callable[[float], None] | None,
) -> Iterator[dict[str, Any]]:
    pause = sleep or time.sleep
    backoff = FIRST_BACKOFF_SECONDS
    for round_ in range(MAX_ROUNDS):
        if round_:
            pause(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_SECONDS)
        response = call(RequestItems=request)
        yield response
        request = response.get(leftover_field) or {}
        if not request:
            return
    raise UnprocessedError(f"DynamoDB left part of a batch unprocessed after {MAX_ROUNDS} rounds")
