"""Replay a job rate through the real store code against moto and count writes per partition key.

    python -m bench.simulate --rate 1000 --seconds 2 [--children 100]

Each simulated job goes through what the pipeline writes for it (`JobStore.put_new`, `claim`,
`complete`); with `--children N` every job is a fan-out parent whose N children are created and
finished through the same store, each child's finish moving its parent's counters in a transaction.
Job i belongs to virtual second i // rate; the replay itself runs as fast as moto in-process allows, so
the figures are writes per key per *virtual* second, set against DynamoDB's 1,000 write units a second
that one partition takes. Index writes are derived from the item before and after each write: a write
to an item in the index costs the index one write, moving it to another index key costs two.
"""

import argparse
import math
import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3

from bench.stack import in_process_moto
from lambdas import config
from lambdas.models.job import NewJob
from lambdas.store import clients, schema
from lambdas.store.jobs import JobStore

PARTITION_WRITE_UNITS = 1_000
_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


@dataclass
class Writes:
    """Write units per partition key per virtual second, for the table and its status index."""

    table: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    index: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    second: int = 0
    _index_key: dict[str, str | None] = field(default_factory=dict)

    def record(self, reader: Any, table: str, operation: str, params: dict[str, Any]) -> None:
        """Add the write units this request cost, per key: the table's and the index's (projection ALL)."""
        transactional = 2 if operation == "TransactWriteItems" else 1
        for key in _written_keys(operation, params):
            found = reader.get_item(TableName=table, Key={schema.JOBS_PK: {"S": key}}, ConsistentRead=True)
            item = found.get("Item", {})
            units = max(1, math.ceil(_size(item) / 1024))
            self.table[self.second][key] += units * transactional
            new = item.get(schema.STATUS_INDEX_PK, {}).get("S")
            old = self._index_key.get(key)
            for index_key in {old, new} - {None}:
                self.index[self.second][str(index_key)] += units
            self._index_key[key] = new


def _size(value: Any) -> int:
    """DynamoDB's item size, closely enough: names and values in bytes, a few bytes per container."""
    if isinstance(value, dict) and len(value) == 1:
        kind, inner = next(iter(value.items()))
        if kind in ("S", "B"):
            return len(inner.encode() if isinstance(inner, str) else inner)
        if kind == "N":
            return len(inner) // 2 + 1
        if kind in ("M", "L"):
            return 3 + _size(inner)
        if kind in ("BOOL", "NULL"):
            return 1
    if isinstance(value, dict):
        return sum(len(name.encode()) + _size(inner) for name, inner in value.items())
    if isinstance(value, list):
        return sum(_size(inner) + 1 for inner in value)
    return 0


def _written_keys(operation: str, params: dict[str, Any]) -> Iterator[str]:
    if operation in ("PutItem",):
        yield params["Item"][schema.JOBS_PK]["S"]
    elif operation in ("UpdateItem", "DeleteItem"):
        yield params["Key"][schema.JOBS_PK]["S"]
    elif operation == "TransactWriteItems":
        for entry in params["TransactItems"]:
            for kind in ("Put", "Update", "Delete"):
                if kind in entry:
                    body = entry[kind]
                    yield (body.get("Item") or body["Key"])[schema.JOBS_PK]["S"]
    elif operation == "BatchWriteItem":
        for requests in params["RequestItems"].values():
            for request in requests:
                yield request["PutRequest"]["Item"][schema.JOBS_PK]["S"]


@contextmanager
def _stack() -> Iterator[JobStore]:
    with in_process_moto() as env:
        os.environ.update(env)
        yield JobStore(env[config.ENV_JOBS_TABLE], int(env[config.ENV_STATUS_SHARDS]), 1)


def _one_job(store: JobStore, children: int) -> None:
    # A fan-out parent carries its endpoints in its payload, which every counter update rewrites.
    endpoints = [
        {"id": f"endpoint-{i}", "url": f"https://hooks.example.com/offload/{i:04d}"} for i in range(children)
    ]
    payload = {"eventType": "invoice.paid", "data": {"invoice": "in_1"}, "endpoints": endpoints}
    job = store.claim_attempt(store.put_new(NewJob(str(uuid.uuid4()), "bench_io", payload, 3)).job_id, 60).job
    if not children:
        store.succeed(job, None)
        return
    kids = [NewJob(str(uuid.uuid4()), "bench_io", {}, 3, parent_id=job.job_id) for _ in range(children)]
    store.create_children(kids)
    store.await_children(job, children, None, 60)
    for kid in kids:
        store.succeed(store.claim_attempt(kid.job_id, 60).job, None)


def simulate(rate: int, seconds: int, children: int = 0) -> Writes:
    writes = Writes()
    with _stack() as store:
        reader = boto3.client("dynamodb")
        table = os.environ[config.ENV_JOBS_TABLE]
        sent: list[dict[str, Any]] = []

        def before(params: dict[str, Any], **_: Any) -> None:
            sent[:] = [params]

        def after(model: Any, **_: Any) -> None:
            if model.name in _WRITES:  # read the item as this write left it, before the next one
                writes.record(reader, table, model.name, sent[0])

        events = clients.client("dynamodb").meta.events
        events.register("provide-client-params.dynamodb", before)
        events.register("after-call.dynamodb", after)
        for second in range(seconds):
            writes.second = second
            for _ in range(rate):
                _one_job(store, children)
    return writes


def report(writes: Writes, rate: int) -> list[str]:
    lines = [
        f"{rate} jobs/s over {len(writes.table)} virtual seconds; one partition takes {PARTITION_WRITE_UNITS} WCU/s"
    ]
    for name, per_second in (("table", writes.table), (f"index {schema.STATUS_INDEX.name}", writes.index)):
        hottest = Counter[str]()
        for counts in per_second.values():
            for key, n in counts.items():
                hottest[key] = max(hottest[key], n)
        total = sum(sum(c.values()) for c in per_second.values()) / max(len(per_second), 1)
        top = ", ".join(f"{key} {n}" for key, n in hottest.most_common(3))
        lines.append(
            f"  {name:<16} {total:9.0f} WCU/s ({total / rate:.1f} per job); hottest keys, WCU/s: {top}"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.simulate", description=__doc__)
    parser.add_argument("--rate", type=int, default=100, help="jobs per second")
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--children", type=int, default=0, help="children per job (a webhook fan-out)")
    args = parser.parse_args(argv)
    for line in report(simulate(args.rate, args.seconds, args.children), args.rate):
        print(line)


if __name__ == "__main__":
    main()
