"""Domain exceptions raised by the store; the only place that speaks DynamoDB error codes."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from lambdas.models.job import Job

# DynamoDB's item size limit (400 KB, counted in bytes of attribute names and values).
ITEM_SIZE_LIMIT = 400 * 1024


class StoreError(Exception):
    pass


class JobExistsError(StoreError):
    """A job with this id already exists (an idempotent replay, or a duplicate child)."""

    def __init__(self, existing: Job) -> None:
        super().__init__(existing.job_id)
        self.existing = existing


class StaleAttemptError(StoreError):
    """The write belongs to an attempt that no longer owns the job (its lease expired, a newer one runs)."""


class NotClaimableError(StoreError):
    """The job cannot be claimed now. `job` is its current state, or None when no such job exists."""

    def __init__(self, job_id: str, job: Job | None) -> None:
        super().__init__(job_id)
        self.job = job


class WaitedTooLongError(NotClaimableError):
    """A waiting job's next wait would take its waits past their bound in all."""


class ItemTooLargeError(StoreError):
    """The job's item would be `size` bytes, over DynamoDB's `limit`: nothing was written."""

    def __init__(self, size: int, limit: int = ITEM_SIZE_LIMIT) -> None:
        super().__init__(f"the stored job would be {size} bytes; at most {limit} bytes are allowed")
        self.size = size
        self.limit = limit


class ConditionFailedError(StoreError):
    """A conditional write's condition did not hold. `item` is the raw item DynamoDB saw, if it said."""

    def __init__(self, item: dict[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.item = item


class TransactionCancelledError(StoreError):
    """A transaction was cancelled. `failed` names the items whose condition did not hold (maybe none,
    when it was cancelled for another reason, such as a conflicting concurrent write); `seen` holds the
    raw item each of them had, when the write asked for it (ReturnValuesOnConditionCheckFailure)."""

    def __init__(self, failed: frozenset[str], seen: dict[str, dict[str, Any]] | None = None) -> None:
        super().__init__(f"transaction cancelled; conditions failed: {sorted(failed)}")
        self.failed = failed
        self.seen = seen or {}


@contextmanager
def domain_errors(item_names: Sequence[str] = ()) -> Iterator[None]:
    """Turn DynamoDB's condition and transaction failures into domain exceptions; others pass through.

    `item_names` names a transaction's items in order, so a cancellation says which of them failed.
    """
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code == "ConditionalCheckFailedException":
            raise ConditionFailedError(error.response.get("Item")) from None
        if code == "TransactionCanceledException":
            reasons = error.response.get("CancellationReasons") or []
            named = [
                (name, reason)
                for name, reason in zip(item_names, reasons, strict=False)
                if reason.get("Code") == "ConditionalCheckFailed"
            ]
            seen = {name: reason["Item"] for name, reason in named if reason.get("Item")}
            raise TransactionCancelledError(frozenset(name for name, _ in named), seen) from None
        raise


class JobMovedError(StoreError):
    """A caller's action found the job (or its fan-out's parent) no longer in the state it acted on."""


class ParentMovedError(JobMovedError):
    """A child's action was refused by its parent's part (the parent, or its counters, was not as seen);
    the child itself is as it was."""
