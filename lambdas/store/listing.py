"""Listing jobs newest first across the shards of one index: a lazy k-way merge of per-shard Queries.

Each shard's key is queried newest first, a few items at a time, and the heads are merged; a page
stops at `limit` items, or earlier when it has spent its read budget (`config.PAGE_EXTRA_QUERIES`
Queries beyond one per shard, `config.PAGE_READ_ITEMS` index entries): a filter that matches little
(another owner's entries in the shared `processing` keys, a type nobody submitted) then costs a bounded
page, possibly an empty one, with positions to read on. An item is taken only when every open shard
offers its head, so a page cut short keeps the newest-first order. Where each shard stands (the last item taken from it, or `END`) is the
position the next page starts from; the lifecycle turns it into an opaque cursor. Every item lives on
one shard only, so a page never repeats an item a previous page returned, and nothing is skipped.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from lambdas import config
from lambdas.store import codec, schema
from lambdas.store.expressions import Query
from lambdas.store.job_table import JobTable

# A shard's position: the sort key and job id of the last item taken from it; END when it has no more.
Position = tuple[int | str, str]
END: Final = "end"
_MIN_BATCH = 4


@dataclass(frozen=True)
class ListQuery:
    index: schema.Index
    keys: Sequence[str]  # one partition key value per shard
    job_type: str | None = None
    owner: str | None = None  # a filter on the projected owner (a client's `processing` list)
    before: int | str | None = None  # only items whose sort key is below this

    def filters(self) -> dict[str, str]:
        """The attributes an entry must equal (both are projected into every list index)."""
        wanted = {codec.JOB_TYPE: self.job_type, codec.OWNER: self.owner}
        return {name: value for name, value in wanted.items() if value is not None}


@dataclass
class _Shard:
    key: str
    start: Position | None
    done: bool = False
    buffer: list[Position] = field(default_factory=list)
    more: bool = True


@dataclass
class _Budget:
    queries: int
    items: int

    @property
    def spent(self) -> bool:
        return self.queries <= 0 or self.items <= 0


class JobListing:
    """The list queries of the jobs table (`JobStore.list_ids` asks it)."""

    def __init__(self, table: JobTable) -> None:
        self._table = table

    def list_ids(
        self, query: ListQuery, limit: int, positions: Mapping[int, Position | str]
    ) -> tuple[list[str], dict[int, Position | str] | None]:
        """Up to `limit` job ids, newest first, and the positions to continue from (None: no more)."""
        shards = []
        for number, key in enumerate(query.keys):
            at = positions.get(number)
            shards.append(_Shard(key, at if isinstance(at, tuple) else None, done=at == END))
        batch = max(_MIN_BATCH, -(-2 * limit // max(len(shards), 1)))
        budget = _Budget(len(shards) + config.PAGE_EXTRA_QUERIES, config.PAGE_READ_ITEMS)
        taken: list[str] = []
        while len(taken) < limit:
            heads = [s for s in shards if not s.done and self._head(query, s, batch, budget)]
            if not heads or any(not s.done and not s.buffer for s in shards):
                break  # nothing left, or the budget ran out before every shard offered its head
            newest = max(heads, key=lambda s: s.buffer[0])
            newest.start = newest.buffer.pop(0)
            taken.append(newest.start[1])
        following: dict[int, Position | str] = {}
        for number, shard in enumerate(shards):
            if shard.done:
                following[number] = END
            elif shard.start is not None:
                following[number] = shard.start
        open_shards = [s for s in shards if not s.done and (s.buffer or s.more)]
        return taken, following if open_shards else None

    def _head(self, query: ListQuery, shard: _Shard, batch: int, budget: _Budget) -> bool:
        """Whether the shard has an item to offer, querying it when its buffer is empty (and the
        budget allows: a shard the budget stopped stays open, neither done nor offering)."""
        while not shard.buffer and shard.more:
            if budget.spent:
                return False
            reads = min(batch, budget.items)  # Limit bounds the entries read, before any filter
            budget.queries -= 1
            budget.items -= reads
            shard.buffer, shard.more = self._query(query, shard, reads)
        if not shard.buffer:
            shard.done = True
        return bool(shard.buffer)

    def _query(self, query: ListQuery, shard: _Shard, batch: int) -> tuple[list[Position], bool]:
        index = query.index
        start = None
        if shard.start is not None:
            sort_value, job_id = shard.start
            start = {
                schema.JOBS_PK: job_id,
                index.partition_key: shard.key,
                index.sort_key: codec.sort_value(index, sort_value),
            }
        before = (
            None if query.before is None else (index.sort_key, "<", codec.sort_value(index, query.before))
        )
        request = Query(
            self._table.name,
            (index.partition_key, shard.key),
            sort=before,
            index=index.name,
            filters=query.filters(),
            limit=batch,
            newest_first=True,
            start=start,
        )
        response = self._table.ddb.query(**request.params())
        found = [codec.position(item, index) for item in response.get("Items", [])]
        more = "LastEvaluatedKey" in response
        if more and not found:
            # Everything read was filtered out: the shard stands past it.
            shard.start = codec.position(response["LastEvaluatedKey"], index)
        return found, more
