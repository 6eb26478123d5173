"""Counting the jobs table's index writes, per index key, by running the real store code against moto.

DynamoDB bills a global secondary index one write when an item's index entry is put or deleted, and
one more when a write changes a projected attribute but no key; moving an item to another index key
is a delete plus a put. `IndexWrites` applies those rules to the item before and after every write
the store makes (the images are read back around each call), so the figures follow the code.

    .venv/bin/python -m tests.support.index_writes

prints, per scenario, index and key family (the key with its shard taken off), the index writes one
job makes on one key of that family, and what one key takes at 10,000 jobs/s with the default shards.
"""

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lambdas import config
from lambdas.models.job import NewJob
from lambdas.store import clients, schema
from lambdas.store.jobs import JobStore

TARGET_JOBS_PER_SECOND = 10_000
PARTITION_WRITES_PER_SECOND = 1_000
_WRITES = ("put_item", "update_item", "transact_write_items", "batch_write_item")
_SHARD_SUFFIX = re.compile(r"#?\d+$")


def _entry(item: Mapping[str, Any], index: schema.Index) -> tuple[str, Any, tuple[Any, ...]] | None:
    if index.partition_key not in item or index.sort_key not in item:
        return None
    projected = tuple(item.get(name) for name in index.include)
    return item[index.partition_key]["S"], next(iter(item[index.sort_key].values())), projected


class IndexWrites:
    """Index writes per (index name, index partition key), from the item images around each write."""

    def __init__(self) -> None:
        self.writes: Counter[tuple[str, str]] = Counter()

    def record(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        for index in schema.JOB_INDEXES:
            old, new = _entry(before, index), _entry(after, index)
            if old == new:
                continue
            if old and new and old[:2] == new[:2]:
                self.writes[(index.name, new[0])] += 1  # a projected attribute changed in place
                continue
            for gone_or_new in (old, new):
                if gone_or_new:
                    self.writes[(index.name, gone_or_new[0])] += 1

    def per_job(self, jobs: int) -> dict[tuple[str, str], float]:
        """Writes one job makes on one key of each (index, key family)."""
        families: Counter[tuple[str, str]] = Counter()
        for (index, key), count in self.writes.items():
            families[(index, _SHARD_SUFFIX.sub("", key))] += count
        return {family: count / jobs for family, count in families.items()}


def key_rate(per_job: float, shards: int, jobs_per_second: int = TARGET_JOBS_PER_SECOND) -> float:
    """Writes a second on one key when `jobs_per_second` spread over `shards` keys of the family."""
    return per_job * jobs_per_second / shards


def _written_ids(operation: str, params: Mapping[str, Any]) -> Iterator[str]:
    if operation == "put_item":
        yield params["Item"][schema.JOBS_PK]["S"]
    elif operation == "update_item":
        yield params["Key"][schema.JOBS_PK]["S"]
    elif operation == "transact_write_items":
        for entry in params["TransactItems"]:
            body = next(iter(entry.values()))
            yield (body.get("Item") or body["Key"])[schema.JOBS_PK]["S"]
    else:
        for requests in params["RequestItems"].values():
            for request in requests:
                yield request["PutRequest"]["Item"][schema.JOBS_PK]["S"]


@contextmanager
def counting(table: str) -> Iterator[IndexWrites]:
    """Count the index writes of every write the cached DynamoDB client makes inside the block."""
    ddb = clients.client("dynamodb")
    counter = IndexWrites()

    def image(job_id: str) -> dict[str, Any]:
        found = ddb.get_item(TableName=table, Key={schema.JOBS_PK: {"S": job_id}}, ConsistentRead=True)
        return dict(found.get("Item", {}))

    def wrapped(operation: str, call: Callable[..., Any], **params: Any) -> Any:
        ids = list(dict.fromkeys(_written_ids(operation, params)))
        before = {job_id: image(job_id) for job_id in ids}
        try:
            return call(**params)
        finally:
            for job_id in ids:
                counter.record(before[job_id], image(job_id))

    originals = {name: getattr(ddb, name) for name in _WRITES}
    for name, call in originals.items():
        setattr(ddb, name, functools.partial(wrapped, name, call))
    try:
        yield counter
    finally:
        for name in _WRITES:
            delattr(ddb, name)


OWNER = "client-a"  # one owner submits everything: the worst case for the owner's keys
JOBS = 64


def _new(job_id: str, parent_id: str | None = None) -> NewJob:
    return NewJob(
        job_id=job_id, job_type="test", payload={}, max_attempts=5, parent_id=parent_id, owner=OWNER
    )


def _straight_through(store: JobStore) -> int:
    for n in range(JOBS):
        job = store.put_new(_new(f"ok-{n}"))
        store.complete(store.claim(job.job_id, 60), {"ok": True})
    return JOBS


def _worker_retry(store: JobStore) -> int:
    """Each job fails once and succeeds on its second attempt; counted per attempt."""
    for n in range(JOBS):
        job = store.put_new(_new(f"retry-{n}"))
        store.retry(store.claim(job.job_id, 60), "try again", 0)
        store.complete(store.claim(job.job_id, 60), {"ok": True})
    return 2 * JOBS


def _manual_retry(store: JobStore) -> int:
    """Each job dies, is retried by a caller (one conditional write) and then succeeds."""
    for n in range(JOBS):
        job = store.put_new(_new(f"manual-{n}"))
        dead = store.fail(store.claim(job.job_id, 60), "boom")
        store.reopen(dead, None, 60)
        store.complete(store.claim(job.job_id, 60), {"ok": True})
    return 2 * JOBS


def _cancel(store: JobStore) -> int:
    for n in range(JOBS):
        store.cancel(store.put_new(_new(f"cancel-{n}")), None)
    return JOBS


def _fan_out(store: JobStore) -> int:
    children = 100
    parent = store.claim(store.put_new(_new("fan")).job_id, 60)
    store.create_children([_new(f"fan-child-{n}", parent_id="fan") for n in range(children)])
    store.await_children(parent, children, {}, 60)
    for n in range(children):
        store.complete(store.claim(f"fan-child-{n}", 60), {"ok": True})
    waiting = store.get("fan")
    assert waiting is not None
    store.finish_parent(waiting)
    return children + 1


SCENARIOS: dict[str, Callable[[JobStore], int]] = {
    "submit, claim, done": _straight_through,
    "a retry, then done (per attempt)": _worker_retry,
    "fan-out of 100 endpoints (per job, parent and children)": _fan_out,
    "dead, retried by a caller, then done (per attempt)": _manual_retry,
    "submit, then cancelled": _cancel,
}


def run_scenarios(store: JobStore, table: str) -> dict[str, dict[tuple[str, str], float]]:
    """Index writes per job per key family for each scenario, through the store's own methods."""
    results = {}
    for name, scenario in SCENARIOS.items():
        with counting(table) as counter:
            jobs = scenario(store)
        results[name] = counter.per_job(jobs)
    return results


def report(results: Mapping[str, Mapping[tuple[str, str], float]], shards: int) -> str:
    lines = [f"index writes per job on one key, and one key's writes/s at {TARGET_JOBS_PER_SECOND:,} jobs/s"]
    for scenario, families in results.items():
        lines.append(f"\n{scenario} ({shards} shards)")
        for (index, family), per_job in sorted(families.items()):
            rate = key_rate(per_job, shards)
            lines.append(f"  {index:14} {family or '<shard>':28} {per_job:5.2f}  {rate:7.0f}/s")
    return "\n".join(lines)


def main() -> None:
    from bench.stack import in_process_moto
    from tests.support.stores import store_from_env

    with in_process_moto() as env:
        store = store_from_env(env)
        results = run_scenarios(store, env[config.ENV_JOBS_TABLE])
    print(report(results, store.shards))


if __name__ == "__main__":
    main()
