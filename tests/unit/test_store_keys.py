"""The jobs table's index key formats (lambdas/store/codec.py, their one home) are stored data: a
deployed table holds items keyed this way, so the formats may not drift. Each was seen to fail with its
function's separator changed (`#` as `/`)."""

from lambdas.models.job import JobStatus
from lambdas.store import codec, schema


def test_each_index_key_has_the_format_the_stored_items_have() -> None:
    assert codec.status_key(JobStatus.DEAD, 3) == "dead#3"
    assert codec.owner_status_key("key-a", JobStatus.PENDING, 0) == "key-a#pending#0"
    assert codec.owner_key("key-a", 31) == "key-a#31"
    assert codec.created_key(7) == "7"


def test_a_job_without_an_owner_is_keyed_under_no_owner() -> None:
    assert codec.owner_key("", 1) == f"{codec.NO_OWNER}#1"
    assert codec.owner_status_key("", JobStatus.DONE, 1) == f"{codec.NO_OWNER}#done#1"


def test_the_items_a_new_job_gets_use_the_same_keys() -> None:
    items = codec.JobItems(shards=4, ttl_seconds=60)
    shard = items.shard_of("job-1")
    state = items.state("job-1", "key-a", JobStatus.PENDING, 0.0, 0.0).assign
    assert state[schema.STATUS_SHARD] == codec.status_key(JobStatus.PENDING, shard)
    assert state[schema.OWNER_STATUS_SHARD] == codec.owner_status_key("key-a", JobStatus.PENDING, shard)
