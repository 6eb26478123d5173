"""moto's server, with DynamoDB's writes applied one at a time as AWS applies a conditional write.

Two of moto's costs that the AWS logic does not need are cut (docs/performance.md), with the same
answers: its dispatcher works out which backend serves a host again for every request, under one
lock shared by all requests, by listing and stat-ing its own package directory and trying ~180 URL
patterns (`remember_backends` keeps each host's answer); and ReceiveMessage checks each message's
retention period through the queue's whole attribute set, counting every message of the queue three
times over per received message (`read_retention_directly` reads the one attribute). UpdateItem's own
costs are cut in `moto_updates`. Standard queues serve message groups as SQS fair queues do
(`fair_queues`). S3's rules for a presigned POST, which moto does not check, are applied by
`s3_post_policy`.

moto's backends do not serialise request threads: two concurrent conditional updates of one item can
both pass their condition. The job lifecycle relies on exactly that never happening (one claim wins),
so the local runtime's server takes a lock around each DynamoDB item operation. UpdateItem's answer is
a copy of the item taken under that lock: moto hands its handler the live item and serialises it after
the lock is released, which, on an item many threads write at once (a flow-control limit), reads it
while another write changes it (AWS answers with the item as this write left it).

The operations are private methods of moto's backend. A moto release that renames one would leave
that operation unlocked and the lifecycle racing silently, so a missing method stops the start instead.
"""

import copy
import functools
import sys
import threading
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from moto.core.utils import unix_time
from moto.dynamodb.models import DynamoDBBackend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.server import main as moto_main
from moto.sqs.models import SQSBackend

from local_runtime import fair_queues, moto_http, moto_updates, s3_post_policy

ITEM_OPERATIONS = (
    "get_item",
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "transact_get_items",
    "batch_write_item",
)


class MotoPatchError(RuntimeError):
    """The installed moto lacks a method the write serialisation wraps."""


def require_item_operations() -> None:
    """Raise `MotoPatchError` unless moto's DynamoDB backend has every operation the lock wraps."""
    missing = [name for name in ITEM_OPERATIONS if not callable(getattr(DynamoDBBackend, name, None))]
    if missing:
        raise MotoPatchError(
            f"moto {version('moto')} has no DynamoDBBackend.{', '.join(missing)}: the local runtime cannot "
            "serialise DynamoDB item writes with it; install the moto pinned in requirements-dev.txt"
        )


def serialise_item_operations(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Wrap moto's DynamoDB item operations in one lock (the in-process tests pass monkeypatch's setattr)."""
    require_item_operations()
    lock = threading.RLock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            with lock:
                answer = method(*args, **kwargs)
                return copy.deepcopy(answer) if method.__name__ == "update_item" else answer

        return call

    for name in ITEM_OPERATIONS:
        set_attribute(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))


def remember_backends(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Keep each host's backend, as moto's dispatcher would find it, after its first request."""
    find = DomainDispatcherApplication.get_backend_for_host
    known: dict[str | None, Any] = {}

    @functools.wraps(find)
    def remembered(self: DomainDispatcherApplication, host: str | None) -> Any:
        # Called under the dispatcher's own lock, so one lookup per host.
        if host not in known:
            known[host] = find(self, host)
        return known[host]

    set_attribute(DomainDispatcherApplication, "get_backend_for_host", remembered)


def read_retention_directly(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Check a received message's retention against the queue's `MessageRetentionPeriod` alone."""

    def retained(self: SQSBackend, queue_name: str, message: Any) -> bool:
        queue: Any = self.get_queue(queue_name)  # moto sets its attributes by name (setattr)
        retention: int = queue.message_retention_period
        return bool(retention + message.sent_timestamp / 1000 > unix_time())

    if callable(getattr(SQSBackend, "is_message_valid_based_on_retention_period", None)):
        set_attribute(SQSBackend, "is_message_valid_based_on_retention_period", retained)


if __name__ == "__main__":
    serialise_item_operations()
    remember_backends()
    read_retention_directly()
    fair_queues.serve_fairly()
    moto_updates.apply()
    s3_post_policy.enforce()
    moto_http.keep_alive()
    moto_main(sys.argv[1:])
