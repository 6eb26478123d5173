"""The index capacity promise (docs/internals/capacity.md): at 10,000 jobs/s with the default shard count,
no index partition key takes more than DynamoDB's 1,000 writes a second.

The writes are counted from the real store code path (tests.support.index_writes), so a change that
moves an index key more often, or projects an attribute that changes, shows up here.
"""

from lambdas import config
from lambdas.store.jobs import JobStore
from tests.support.index_writes import (
    PARTITION_WRITES_PER_SECOND,
    IndexWrites,
    counting,
    key_rate,
    run_scenarios,
)
from tests.support.pipeline import Pipeline


def test_no_index_key_takes_1000_writes_a_second_at_10k_jobs(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `config.STATUS_SHARDS = 8` (2 writes x 10,000 / 8 = 2,500 a second on one key)."""
    assert store.shards == config.STATUS_SHARDS

    results = run_scenarios(store, pipeline.table)

    for scenario, families in results.items():
        for (index, family), per_job in families.items():
            rate = key_rate(per_job, store.shards)
            assert rate < PARTITION_WRITES_PER_SECOND, f"{scenario}: {index} {family} at {rate:.0f}/s"
    straight = results["submit, claim, done"]
    # A job passing through a status writes its key twice (in, out); a finished job leaves byStatus.
    assert straight[("byStatus", "pending")] == 2
    assert straight[("byStatus", "processing")] == 2
    assert ("byStatus", "done") not in straight
    assert straight[("byCreated", "")] == 1


def test_a_fan_outs_children_spread_over_the_shards(pipeline: Pipeline, store: JobStore) -> None:
    from tests.support.index_writes import SCENARIOS

    with counting(pipeline.table) as counter:
        SCENARIOS["fan-out of 100 endpoints (per job, parent and children)"](store)

    pending_keys = _keys(counter, "byStatus", "pending#")
    # 100 children over 32 shards: every shard used would need luck; most of them are.
    assert len(pending_keys) >= store.shards * 3 // 4
    assert max(pending_keys.values()) <= 2 * 10  # no key holds more than ~10 of the 100 children


def _keys(counter: IndexWrites, index: str, prefix: str) -> dict[str, int]:
    return {key: n for (name, key), n in counter.writes.items() if name == index and key.startswith(prefix)}
