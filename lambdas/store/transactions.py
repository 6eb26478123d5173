"""TransactWriteItems for writes that must commit together: all of them, or none.

Items are named, so a cancellation says which condition failed and what that item held
(`TransactionCancelledError.failed` and `.seen`). A transaction cancelled with no failed condition
(another transaction on one of its items was in flight, or throttling) is sent again with backoff: it
changed nothing, and DynamoDB asks callers to retry it.
"""

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lambdas.store import clients
from lambdas.store.errors import TransactionCancelledError, domain_errors
from lambdas.store.expressions import Update

MAX_ROUNDS = 6
FIRST_BACKOFF_SECONDS = 0.02

# One item of a transaction: its name and its TransactItems entry.
Operation = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Put:
    """An unconditional put (a marshalled item) that rides along with a job's write."""

    table: str
    item: dict[str, Any]

    def operation(self, name: str) -> Operation:
        return name, {"Put": {"TableName": self.table, "Item": self.item}}

    def write_alone(self) -> None:
        clients.client("dynamodb").put_item(TableName=self.table, Item=self.item)


def update(name: str, table: str, key: dict[str, Any], change: Update, seen: bool = False) -> Operation:
    """A conditional update; with `seen`, a failed condition reports the item it saw."""
    entry: dict[str, Any] = {"TableName": table, "Key": key, **change.params()}
    if seen:
        entry["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return name, {"Update": entry}


def write(
    ddb: Any,
    operations: Sequence[Operation],
    puts: Sequence[Put] = (),
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
) -> None:
    """Commit `operations` and `puts` together; TransactionCancelledError when a condition failed.

    The pause before a resend is jittered (half to all of the backoff), so children of one parent that
    conflicted do not meet again in step."""
    named = [*operations, *(put.operation(f"put{i}") for i, put in enumerate(puts))]
    backoff = FIRST_BACKOFF_SECONDS
    for round_ in range(MAX_ROUNDS):
        try:
            with domain_errors(item_names=[name for name, _ in named]):
                ddb.transact_write_items(TransactItems=[entry for _, entry in named])
            return
        except TransactionCancelledError as cancelled:
            if cancelled.failed or round_ == MAX_ROUNDS - 1:
                raise
        sleep(backoff * (0.5 + rng() / 2))
        backoff *= 2
