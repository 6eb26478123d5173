"""GET /stats through the real api handler under moto: the caller's counts, jobs finished per minute,
the queues' depths; bounded Queries on the list indexes, never a Scan."""

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lambdas import config
from lambdas.lifecycle.requests import stats
from lambdas.models.job import JobStatus
from lambdas.store.jobs import JobStore
from tests.support.calls import record_params
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock

pytestmark = pytest.mark.usefixtures("test_types")

ALPHA = "alpha0key1"
BETA = "beta00key2"


def stats_of(pipeline: Pipeline, key: str) -> dict[str, Any]:
    response = pipeline.request("GET", "/stats", api_key_id=key)
    assert response.status == 200, response.body
    return dict(response.body)


def counts(document: dict[str, Any], part: str) -> dict[str, int]:
    assert not any(tally["more"] for tally in document[part].values())
    return {name: tally["count"] for name, tally in document[part].items() if tally["count"]}


def test_each_caller_counts_its_own_jobs_and_the_operator_counts_all(
    pipeline: Pipeline, clock: Clock
) -> None:
    # given alpha: one job that dies, two that wait (one delayed); beta: one that waits
    pipeline.submit("test_permanent", {"value": "x"}, api_key_id=ALPHA)
    pipeline.drain()
    pipeline.submit("test_echo", {}, api_key_id=ALPHA)
    pipeline.submit("test_echo", {}, api_key_id=ALPHA, delaySeconds=600)
    pipeline.submit("test_echo", {}, api_key_id=BETA)
    clock.advance(90)

    alpha = stats_of(pipeline, ALPHA)
    operator = stats_of(pipeline, pipeline.env[config.ENV_OPERATOR_KEY_ID])

    assert set(alpha["statuses"]) == {status.value for status in JobStatus}
    assert counts(alpha, "statuses") == {"pending": 2, "dead": 1}
    assert counts(alpha, "types") == {"test_echo": 2, "test_permanent": 1}
    assert counts(operator, "statuses") == {"pending": 3, "dead": 1}
    assert counts(stats_of(pipeline, BETA), "statuses") == {"pending": 1}
    # the dead job ended 90 s ago: in the minute before the current one
    minutes = alpha["finishedPerMinute"]
    assert len(minutes) == stats.WINDOW_MINUTES
    assert [m["minute"] for m in minutes] == sorted(m["minute"] for m in minutes)
    assert sum(m["dead"] for m in minutes) == 1
    assert sum(m["done"] for m in minutes) == 0
    assert any(m["dead"] for m in minutes[-3:-1])
    assert alpha["more"] is False
    # the pending jobs were submitted 90 s ago
    assert 90 <= alpha["queue"]["oldestPendingAgeSeconds"] < 100


def test_each_minute_is_labelled_by_its_start_the_current_one_last(pipeline: Pipeline, clock: Clock) -> None:
    """Seen to fail against `_finished_per_minute`'s `first + 60 * n` as `61 * n` (the labels drift a
    second a minute; sample 581628's `x__finished_per_minute__mutmut_59`)."""
    clock.now = datetime(2026, 12, 2, 12, 30, 20, tzinfo=UTC).timestamp()

    minutes = stats_of(pipeline, ALPHA)["finishedPerMinute"]

    starts = [datetime.fromisoformat(m["minute"]) for m in minutes]
    assert starts[-1] == datetime(2026, 12, 2, 12, 30, tzinfo=UTC)
    assert {later - earlier for earlier, later in itertools.pairwise(starts)} == {timedelta(minutes=1)}


def test_the_queues_depths_are_sqs_own(pipeline: Pipeline) -> None:
    pipeline.submit("test_echo", {}, api_key_id=ALPHA)
    pipeline.submit("test_echo", {}, api_key_id=ALPHA, delaySeconds=600)
    pipeline.sqs.send_message(QueueUrl=pipeline.dlq_url, MessageBody='{"jobId": "gone"}')

    document = stats_of(pipeline, pipeline.env[config.ENV_OPERATOR_KEY_ID])

    assert {k: document["queue"][k] for k in ("visible", "inFlight", "delayed")} == {
        "visible": 1,
        "inFlight": 0,
        "delayed": 1,
    }
    assert document["deadLetterQueue"] == {"visible": 1}


def test_a_client_sees_no_queue_depths_only_its_own_numbers(pipeline: Pipeline) -> None:
    """The queues are the whole pipeline's: how deep they are says how much others submit. Seen to fail
    (visible 2, and two GetQueueAttributes) with `pipeline_stats`'s `if caller.operator` read as `if True`."""
    pipeline.submit("test_echo", {}, api_key_id=ALPHA)
    pipeline.submit("test_echo", {}, api_key_id=BETA)
    asked = record_params("sqs", "GetQueueAttributes")

    document = stats_of(pipeline, BETA)

    assert {k: document["queue"][k] for k in ("visible", "inFlight", "delayed")} == {
        "visible": None,
        "inFlight": None,
        "delayed": None,
    }
    assert document["deadLetterQueue"] is None
    assert asked == []
    assert counts(document, "statuses") == {"pending": 1}


def test_nothing_to_show_is_zeros_and_nulls(pipeline: Pipeline) -> None:
    document = stats_of(pipeline, ALPHA)
    assert counts(document, "statuses") == {}
    assert document["types"] == {}
    assert document["queue"]["oldestPendingAgeSeconds"] is None
    assert all(m["done"] == m["dead"] == 0 for m in document["finishedPerMinute"])


def test_a_count_stops_at_its_bound_and_says_so(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bound of 8 reads one entry per shard (32 shards): 40 jobs put two on some shard.
    monkeypatch.setattr(stats, "COUNT_CAP", 8)
    for _ in range(40):
        pipeline.submit("test_echo", {}, api_key_id=ALPHA)

    document = stats_of(pipeline, ALPHA)

    assert document["statuses"]["pending"] == {"count": 8, "more": True}
    assert document["types"]["test_echo"]["more"] is True
    assert document["statuses"]["dead"] == {"count": 0, "more": False}


def test_stats_are_bounded_queries_never_a_scan(pipeline: Pipeline) -> None:
    pipeline.submit("test_echo", {}, api_key_id=ALPHA)
    stats_of(pipeline, ALPHA)  # the store's client exists from here on
    scans = record_params("dynamodb", "Scan")
    queries = record_params("dynamodb", "Query")

    stats_of(pipeline, ALPHA)

    assert scans == []
    assert queries
    shards = int(pipeline.env[config.ENV_STATUS_SHARDS])
    assert all(query["Limit"] <= -(-stats.COUNT_CAP // shards) for query in queries)


def test_a_count_under_its_bound_is_exact_when_a_shard_holds_several_jobs(pipeline: Pipeline) -> None:
    """Broken line: `_share` (store/gauges.py) as `max(1, +(-cap // shards))` (one entry per shard)."""
    # one job more than there are shards: some shard holds two of them
    jobs = int(pipeline.env[config.ENV_STATUS_SHARDS]) + 1
    for _ in range(jobs):
        pipeline.submit("test_echo", {}, api_key_id=ALPHA)

    document = stats_of(pipeline, ALPHA)

    assert document["statuses"]["pending"] == {"count": jobs, "more": False}
    assert document["types"]["test_echo"] == {"count": jobs, "more": False}


def test_a_caller_counts_only_its_own_running_jobs(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `_params`'s (store/gauges.py) owner filter on the attribute `OWNER`."""
    # Running jobs are listed by status alone (a claim cannot write the owner's key): the owner is a filter.
    for key in (ALPHA, BETA, BETA):
        store.claim(pipeline.submit("test_echo", {}, api_key_id=key), lease_seconds=60)

    assert counts(stats_of(pipeline, ALPHA), "statuses") == {"processing": 1}
