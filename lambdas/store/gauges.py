"""What GET /stats reads: bounded reads of the jobs table's list indexes, and the queues' depths.

Every index read is one Query per shard, at most `ceil(cap / shards)` entries each, so a figure costs
the same at a thousand jobs as at a billion: a count reads at most `cap` index entries (Select=COUNT,
no item is returned) and says `more` when any shard had more than it read. Shards are read in
parallel: a page of stats is several Queries per shard.
"""

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from lambdas.store import clients, codec
from lambdas.store.expressions import Query
from lambdas.store.listing import ListQuery

_PARALLEL_QUERIES = 16
T = TypeVar("T")


@dataclass(frozen=True)
class Bounded:
    count: int
    more: bool  # a shard had entries beyond what was read: `count` is a lower bound


@dataclass(frozen=True)
class Sample:
    values: list[Any]  # one value of the projected attribute per entry read
    more: bool


@dataclass(frozen=True)
class QueueDepth:
    visible: int | None
    in_flight: int | None
    delayed: int | None


@dataclass(frozen=True)
class _Read:
    """One Query per shard of a ListQuery: what it selects, how many entries, from where."""

    limit: int
    since: int | None = None  # only entries whose sort key is at or after this
    attribute: str | None = None  # project only this attribute (None: Select=COUNT)
    oldest_first: bool = False


class JobGauges:
    def __init__(self, table_name: str) -> None:
        self._table = table_name

    @property
    def _ddb(self) -> Any:
        return clients.client("dynamodb")

    def count(self, query: ListQuery, cap: int, since: int | None = None) -> Bounded:
        """Entries of the query (sort key at or after `since`), counting at most about `cap`."""
        pages = self._per_shard(query, _Read(_share(cap, query), since))
        return Bounded(sum(int(page["Count"]) for page in pages), _more(pages))

    def sample(self, query: ListQuery, attribute: str, cap: int, since: int | None = None) -> Sample:
        """The newest entries' `attribute` (one the index holds), at most about `cap` of them."""
        pages = self._per_shard(query, _Read(_share(cap, query), since, attribute))
        values = [_plain(item[attribute]) for page in pages for item in page["Items"] if attribute in item]
        return Sample(values, _more(pages))

    def oldest(self, query: ListQuery) -> int | str | None:
        """The smallest sort key of the query's entries (None when it has none): one entry per shard."""
        sort_key = query.index.sort_key
        pages = self._per_shard(query, _Read(1, attribute=sort_key, oldest_first=True))
        keys = [_plain(item[sort_key]) for page in pages for item in page["Items"]]
        return min(keys) if keys else None

    def _per_shard(self, query: ListQuery, read: _Read) -> list[dict[str, Any]]:
        def one(key: str) -> dict[str, Any]:
            return dict(self._ddb.query(**_query(self._table, query, key, read).params()))

        return _parallel(one, query.keys)


def _share(cap: int, query: ListQuery) -> int:
    return max(1, -(-cap // max(len(query.keys), 1)))


def _more(pages: list[dict[str, Any]]) -> bool:
    return any("LastEvaluatedKey" in page for page in pages)


def _query(table: str, query: ListQuery, key: str, read: _Read) -> Query:
    index = query.index
    since = None if read.since is None else (index.sort_key, ">=", codec.sort_value(index, read.since))
    return Query(
        table,
        (index.partition_key, key),
        sort=since,
        index=index.name,
        filters=query.filters(),
        limit=read.limit,
        newest_first=not read.oldest_first,
        projection=() if read.attribute is None else (read.attribute,),
        count=read.attribute is None,
    )


def _parallel(read: Callable[[str], T], keys: Sequence[str]) -> list[T]:
    if len(keys) <= 1:
        return [read(key) for key in keys]
    with ThreadPoolExecutor(max_workers=min(_PARALLEL_QUERIES, len(keys))) as pool:
        return list(pool.map(read, keys))


def _plain(value: dict[str, Any]) -> Any:
    return int(value["N"]) if "N" in value else value.get("S")


def queue_depth(queue_url: str) -> QueueDepth:
    names = {
        "visible": "ApproximateNumberOfMessages",
        "in_flight": "ApproximateNumberOfMessagesNotVisible",
        "delayed": "ApproximateNumberOfMessagesDelayed",
    }
    attributes = clients.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=list(names.values())
    )
    found = attributes.get("Attributes", {})
    return QueueDepth(**{field: int(found.get(name, 0)) for field, name in names.items()})
