"""DynamoDB write units, as DynamoDB bills them, of every write the functions' clients make.

A write costs one unit per started KB of the larger of the item's size before and after it (a put
into an empty slot: the new item's size), and twice that inside TransactWriteItems. moto does not
return ConsumedCapacity for every operation, so the meter reads each written item just before and
just after the call (with a client of its own, not counted) and sizes it the way the store does
(`codec.item_size`, names plus values). Meter outside `stack.counting_calls`, so the meter's own reads
are not counted as the functions' calls.
"""

import math
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

from lambdas.store.codec import item_size

_KEY_NAMES = ("jobId", "fanoutId", "attemptKey", "limit", "key")  # the limits table: (limit, key)
_WRITES = ("PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem")


class WriteUnits:
    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._lock = threading.Lock()
        self.units = 0
        self.by_table: Counter[str] = Counter()
        self.largest_kb = 0

    def before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if model.name in _WRITES:
            context["write_units"] = [
                (table, key, factor, self._size(table, key))
                for table, key, factor in _targets(model.name, params)
            ]

    def after(self, context: dict[str, Any], **_: Any) -> None:
        # A write refused by its condition is billed too, so every answer counts.
        targets = context.pop("write_units", None)
        if not targets:
            return
        total: Counter[str] = Counter()
        for table, key, factor, size_before in targets:
            size = max(size_before, self._size(table, key))
            kb = max(1, math.ceil(size / 1024))
            total[table] += factor * kb
            self.largest_kb = max(self.largest_kb, kb)
        with self._lock:
            self.units += total.total()
            self.by_table.update(total)

    def _size(self, table: str, key: dict[str, Any]) -> int:
        item = self._reader.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return item_size(item) if item else 0


def _targets(operation: str, params: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], int]]:
    if operation == "UpdateItem":
        yield params["TableName"], params["Key"], 1
    elif operation == "PutItem":
        yield params["TableName"], _key_of(params["Item"]), 1
    elif operation == "BatchWriteItem":
        for table, requests in params["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    yield table, _key_of(request["PutRequest"]["Item"]), 1
    else:
        for entry in params["TransactItems"]:
            (_kind, body), *_ = entry.items()
            key = body.get("Key") or _key_of(body.get("Item", {}))
            yield body["TableName"], key, 2


def _key_of(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item[name] for name in _KEY_NAMES if name in item}


@contextmanager
def metering(reader_client: Any = None) -> Iterator[WriteUnits]:
    """Meter every DynamoDB client created meanwhile (and the default session's)."""
    reader = reader_client or boto3.session.Session().client("dynamodb")
    meter = WriteUnits(reader)
    original = boto3.session.Session.client

    def client(self: Any, *args: Any, **kwargs: Any) -> Any:
        made = original(self, *args, **kwargs)
        if made.meta.service_model.service_name == "dynamodb":
            made.meta.events.register("provide-client-params.dynamodb", meter.before)
            made.meta.events.register("after-call.dynamodb", meter.after)
        return made

    boto3.session.Session.client = client
    try:
        yield meter
    finally:
        boto3.session.Session.client = original
