"""The schedules tick with one client's 100 schedules (the per-client cap), each with a maximal payload
that grows when parsed (64 KiB of `{},`: ~21,800 empty objects, ~1.4 MB of dicts once parsed), all due in
the tick's minute.

- the tick's peak Python heap (tracemalloc) over the first tick: it holds a page of timings and one
  schedule at a time, never the jobs it made (goal: 128 MB, half the function's 256 MB);
- the write units each firing costs beyond its job's own put (bench/write_units.py: as DynamoDB bills
  them): its small fired item and the owner's day counter (goal: 2).

The schedules are written through the store (as the API writes them once checked), in moto's server.
"""

import time
import tracemalloc
import uuid
from datetime import UTC, datetime

from bench.report import Figure
from bench.stack import Stack, context
from bench.write_units import metering
from lambdas import config
from lambdas.models.schedule import Overlap, Schedule, ScheduleState
from lambdas.models.timestamps import iso_time
from lambdas.store import clients
from lambdas.store.codec import compact_json

SCHEDULES_HANDLER = "lambdas.handlers.schedules.handler"
SCHEDULES = config.MAX_SCHEDULES_PER_CLIENT
OWNER = "bench-client"


def maximal_payload() -> dict[str, list[dict[str, int]]]:
    """The most `{}` items a schedule's payload may hold: 3 bytes of JSON each, a 64-byte dict parsed."""
    payload: dict[str, list[dict[str, int]]] = {
        "values": [{} for _ in range(config.MAX_SCHEDULE_PAYLOAD_BYTES // 3 - 16)]
    }
    assert len(compact_json(payload)) <= config.MAX_SCHEDULE_PAYLOAD_BYTES
    return payload


def measure(stack: Stack) -> list[Figure]:
    from lambdas.handlers import schedules as function
    from lambdas.store.schedules import ScheduleStore

    stack.use(SCHEDULES_HANDLER)
    function._parts.cache_clear()
    table = ScheduleStore(stack.provisioned.function_env(SCHEDULES_HANDLER)[config.ENV_SCHEDULES_TABLE])
    now = time.time()
    payload = maximal_payload()
    for n in range(SCHEDULES):
        table.create(
            Schedule(
                schedule_id=str(uuid.uuid4()),
                owner=OWNER,
                name=f"maximal {n}",
                expression="rate(1 minute)",
                time_zone="UTC",
                job_type="bench_sleep",
                payload=payload,
                max_attempts=1,
                overlap=Overlap.ALLOW,
                state=ScheduleState.ENABLED,
                created_at=iso_time(now),
                start_at=int(now * 1000),
            ),
            SCHEDULES,
        )
    del payload
    tick = {"tick": datetime.fromtimestamp(int(now) + 1, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    with metering() as meter:
        clients.reset()  # the function's clients are made anew, metered
        function._parts.cache_clear()
        tracemalloc.start()
        began = time.monotonic()
        try:
            answered = function.handler(tick, context("schedules"))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            took = time.monotonic() - began
            tracemalloc.stop()
    created = answered["created"]
    jobs_table = stack.provisioned.function_env(SCHEDULES_HANDLER)[config.ENV_JOBS_TABLE]
    beyond = meter.units - meter.by_table[jobs_table]
    peak_mb = peak / 2**20
    return [
        Figure(
            f"schedules tick: peak heap, {SCHEDULES} maximal schedules",
            peak_mb,
            128,
            f"{peak_mb:.1f} MB Python heap (tracemalloc) firing {created} of {SCHEDULES} schedules "
            f"of {config.MAX_SCHEDULE_PAYLOAD_BYTES // 1024} KiB in {took:.1f} s (traced, against moto)",
            unit=" MB",
        ),
        Figure(
            "schedules tick: write units per firing beyond its job",
            beyond / max(created, 1),
            2,
            f"{beyond} WCU on the schedules table for {created} firings "
            f"(the jobs' own puts: {meter.by_table[jobs_table]} WCU)",
            unit="",
        ),
    ]
