"""moto's server, with DynamoDB's writes applied one at a time as AWS applies a conditional write.

moto's backends do not serialise request threads: two concurrent conditional updates of one item can
both pass their condition. The job lifecycle relies on exactly that never happening (one claim wins),
so the local runtime's server takes a lock around each DynamoDB item operation.
"""

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.models import DynamoDBBackend
from moto.server import main as moto_main

_ITEM_OPERATIONS = (
    "get_item",
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "transact_get_items",
    "batch_write_item",
)


def serialise_item_operations(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Wrap moto's DynamoDB item operations in one lock (the in-process tests pass monkeypatch's setattr)."""
    lock = threading.RLock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return call

    for name in _ITEM_OPERATIONS:
        if hasattr(DynamoDBBackend, name):
            set_attribute(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))


if __name__ == "__main__":
    serialise_item_operations()
    moto_main(sys.argv[1:])
