"""The jobs table's raw reads and writes: a job read (with its fan-out's counters), one conditional
UpdateItem, the codec that shapes the items, and the clock.

`JobStore` (every write of a job), `ChildEndings` (a child's terminal write with its fan-out's counters)
and `JobListing` (the listing queries) each hold one and reach DynamoDB's job items only through it.
"""

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from lambdas.models.job import Job
from lambdas.store import batches, clients, codec, schema
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
        self.name = table_name
        self._shards = shards
        self.items = codec.JobItems(shards, finished_ttl_days * 86_400)
        self._clock = clock

    @property
    def shards(self) -> int:
        return self._shards

    @property
    def ddb(self) -> Any:
        return clients.client("dynamodb")

    def now(self) -> float:
        return self._clock()

    def get(self, job_id: str, counts: bool = True) -> Job | None:
        """The job (consistent read); a waiting or finished fan-out with its counters item's counts
        (without `counts`, a reader that needs none saves the second read: `children` is then None)."""
        item = self.raw_item(codec.key(job_id))
        if item is None or not codec.is_job_item(item):
            return None
        if not codec.is_parent_item(item):
            return codec.to_job(item)
        if not counts:
            return dataclasses.replace(codec.to_job(item), children=None)
        return codec.to_job(item, self.raw_item(codec.counters_key(job_id)))

    def raw_item(self, key: dict[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.ddb.get_item(
            TableName=self.name, Key=key, ConsistentRead=True
        ).get("Item")
        return item

    def get_many(self, job_ids: Sequence[str]) -> list[Job]:
        """The jobs that exist among `job_ids` (consistent reads), in the order of `job_ids`; the
        fan-outs among them with their counters (one more BatchGetItem for those)."""
        keys = [codec.key(i) for i in dict.fromkeys(job_ids)]
        found = [item for item in batches.get_all(self.ddb, self.name, keys) if codec.is_job_item(item)]
        parents = [item[schema.JOBS_PK]["S"] for item in found if codec.is_parent_item(item)]
        counters = {}
        if parents:
            counter_keys = [codec.counters_key(p) for p in parents]
            for item in batches.get_all(self.ddb, self.name, counter_keys):
                counters[codec.parent_of_counters(item[schema.JOBS_PK]["S"])] = item
        jobs = {j.job_id: j for j in (codec.to_job(i, counters.get(i[schema.JOBS_PK]["S"])) for i in found)}
        return [jobs[i] for i in job_ids if i in jobs]

    def counters_ttl(self) -> dict[str, int]:
        """A counters item expires the finished-job TTL after its last change: about when its parent,
        which finished at its last child's change, does."""
        return {schema.TTL_ATTRIBUTE: int(self.now()) + self.items.ttl_seconds}

    def as_job(self, item: dict[str, Any]) -> Job:
        """The Job an item just written holds; a fan-out's counts read from its counters item."""
        if not codec.is_parent_item(item):
            return codec.to_job(item)
        return codec.to_job(item, self.raw_item(codec.counters_key(item[schema.JOBS_PK]["S"])))

    def seen(self, job_id: str, failed: ConditionFailedError) -> Job | None:
        """The item a failed condition saw, from the error when DynamoDB returned it."""
        return codec.to_job(failed.item) if failed.item else self.get(job_id)

    def update(self, job_id: str, update: Update, returns: str = "ALL_NEW") -> dict[str, Any]:
        """Apply `update`; ConditionFailedError (with the item it saw) when its condition fails."""
        with domain_errors():
            response = self.ddb.update_item(
                TableName=self.name,
                Key=codec.key(job_id),
                **update.params(),
                ReturnValues=returns,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        return response.get("Attributes", {})

    def update_or_stale(self, job_id: str, update: Update) -> Job:
        """Apply `update`, the job as written; StaleAttemptError when its condition fails."""
        return self.as_job(self._update_or_stale(job_id, update, "ALL_NEW"))

    def write_or_stale(self, job_id: str, update: Update) -> None:
        """Apply `update` asking nothing back (no item to copy, send and parse: a worker's outcome
        needs none); StaleAttemptError when its condition fails."""
        self._update_or_stale(job_id, update, "NONE")

    def _update_or_stale(self, job_id: str, update: Update, returns: str) -> dict[str, Any]:
        try:
            return self.update(job_id, update, returns)
        except ConditionFailedError:
            raise StaleAttemptError(job_id) from None

    def require(self, job_id: str) -> Job:
        """The job, which must exist (LookupError otherwise)."""
        job = self.get(job_id)
        if job is None:
            raise LookupError(job_id)
        return job
