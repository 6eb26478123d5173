"""The jobs table's plumbing shared by every group of job writes: reads, one conditional update, and
a job's write together with its parent's in one transaction.

`JobStore` (the lifecycle's transitions), `JobListing` (the listing queries) and `JobActions` (a
caller's retry and cancel) build on it.
"""

import time
from collections.abc import Callable, Sequence
from typing import Any

from lambdas.models.job import Job
from lambdas.store import batches, clients, codec, transactions
from lambdas.store.errors import (
    ConditionFailedError,
    StaleAttemptError,
    domain_errors,
)
from lambdas.store.expressions import Update


class JobTable:
    def __init__(
        self,
        table_name: str,
        shards: int,
        finished_ttl_days: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table = table_name
        self._shards = shards
        self._items = codec.JobItems(shards, finished_ttl_days * 86_400)
        self._clock = clock

    @property
    def shards(self) -> int:
        return self._shards

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def now(self) -> float:
        return self._clock()

    def get(self, job_id: str) -> Job | None:
        response = self._ddb.get_item(TableName=self._table, Key=codec.key(job_id), ConsistentRead=True)
        item = response.get("Item")
        return codec.to_job(item) if item else None

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        """The jobs that exist among `job_ids` (consistent reads), in the order of `job_ids`."""
        found = batches.get_all(self._ddb, self._table, [codec.key(i) for i in dict.fromkeys(job_ids)])
        jobs = {job.job_id: job for job in map(codec.to_job, found)}
        return [jobs[i] for i in job_ids if i in jobs]

    def _seen(self, job_id: str, failed: ConditionFailedError) -> Job | None:
        """The item a failed condition saw, from the error when DynamoDB returned it."""
        return codec.to_job(failed.item) if failed.item else self.get(job_id)

    def _update(self, job_id: str, update: Update, returns: str = "ALL_NEW") -> dict[str, Any]:
        """Apply `update`; ConditionFailedError (with the item it saw) when its condition fails."""
        with domain_errors():
            response = self._ddb.update_item(
                TableName=self._table,
                Key=codec.key(job_id),
                **update.params(),
                ReturnValues=returns,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        return response.get("Attributes", {})

    def _update_or_stale(self, job_id: str, update: Update) -> Job:
        try:
            return codec.to_job(self._update(job_id, update))
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None

    def _with_parent(self, job_id: str, update: Update, parent_id: str, parent_update: Update) -> None:
        """Both updates or neither; TransactionCancelledError names the item(s) whose condition failed."""
        transactions.write(
            self._ddb,
            [
                transactions.update("job", self._table, codec.key(job_id), update),
                transactions.update("parent", self._table, codec.key(parent_id), parent_update),
            ],
        )

    def _require(self, job_id: str) -> Job:
        job = self.get(job_id)
        if job is None:
            raise LookupError(job_id)
        return job
