"""What a caller reads: a fan-out's children page says why each failed child failed and pages through
every child, a delivery log's cursor serves only the log it came from, a finished job's download links
say when they expire (and a result that is not an object has none), lists filtered by type (and owner)
find every match.

Found by `make mutate` (mutants of `reads`, `uploads.download_links` and `JobListing._query` no test
failed on). Each test was first run against the one-line break its docstring names, seen to fail,
then restored.
"""

import pytest

from lambdas import config
from lambdas.lifecycle import operations
from lambdas.lifecycle.errors import InvalidCursorError
from lambdas.lifecycle.uploads import download_links
from lambdas.models.job import JobStatus, NewJob
from lambdas.models.timestamps import iso_time
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from lambdas.store.uploads import result_key
from tests.integration.test_operations import (
    ALICE,
    OPERATOR,
    _all_pages,
    _delivery_attempt,
    _fan_out,
    _job,
)
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env


def test_a_failed_child_is_listed_with_its_last_error(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_children`'s `last_error=child.last_error` as `last_error=None`."""
    _, children = _fan_out(store, 2)
    store.fail(store.claim(children[0], 60), "connection refused")

    page = operations.list_children(store, ALICE, "fan", status=None, limit=10, cursor=None)

    assert [(c.job_id, c.status, c.last_error) for c in page.children] == [
        (children[0], "dead", "connection refused"),
        (children[1], "pending", None),
    ]


def test_a_fan_outs_children_page_through_to_the_last_one(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_children`'s `next_cursor = paging.encode(tag, at) if ...` as `next_cursor = None`
    (a fan-out of more children than one page lists only its first page)."""
    _, children = _fan_out(store, 5)

    listed = _all_pages(
        lambda cursor: operations.list_children(store, ALICE, "fan", status=None, limit=2, cursor=cursor),
        "children",
    )

    assert [c.job_id for c in listed] == children


def test_a_delivery_log_cursor_is_refused_by_another_jobs_log(pipeline: Pipeline, store: JobStore) -> None:
    """Broken line: `list_deliveries`'s `tag = paging.query_tag("deliveries", job_id)` as `tag = None`
    (every delivery log's cursor then fits every other's)."""
    log = DeliveryLog(pipeline.env[config.ENV_DELIVERIES_TABLE])
    _, children = _fan_out(store, 2)
    for n, child in enumerate(children):
        log.record(_delivery_attempt(child, n, 1))
    cursor = operations.list_deliveries(store, log, ALICE, "fan", limit=1, cursor=None).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidCursorError):
        operations.list_deliveries(store, log, ALICE, children[1], limit=1, cursor=cursor)


@pytest.mark.parametrize("result", [None, ["results/j/thumb.png"], "results/j/thumb.png"], ids=str)
def test_a_done_job_whose_result_is_not_an_object_has_no_download_links(
    pipeline: Pipeline, store: JobStore, result: object
) -> None:
    """A job type may return any JSON value; GET /jobs/{id} must still answer. Broken line:
    `download_links`'s `status is not DONE or not isinstance(result, dict)` with `and` (an
    AttributeError, a 500, on `result.get`)."""
    _job(store, "j")
    store.complete(store.claim("j", 60), result)
    job = store.get("j")
    assert job is not None

    assert download_links(job) == []


def test_a_finished_jobs_download_links_expire_when_their_signature_does(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `download_links`'s `now + expires_in` as `now - expires_in` (links already expired)."""
    _job(store, "j")
    store.complete(store.claim("j", 60), {"keys": [result_key("j", "thumb.png"), "uploads/elsewhere.png"]})
    job = store.get("j")
    assert job is not None

    (link,) = download_links(job, now=1_796_000_000)

    assert link.key == result_key("j", "thumb.png")
    assert link.expires_at == iso_time(1_796_000_000 + config.DOWNLOAD_URL_EXPIRES_SECONDS)
    assert f"X-Amz-Expires={config.DOWNLOAD_URL_EXPIRES_SECONDS}" in link.url


def test_a_callers_running_jobs_of_one_type_are_listed_through_both_filters(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `_query`'s `" AND ".join(filters)` as `"XX AND XX".join(...)` (a 500 with two filters)."""
    for job_id, job_type, owner in (
        ("a1", "echo", ALICE.owner),
        ("a2", "other", ALICE.owner),
        ("b1", "other", "b"),
    ):
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=owner))
        store.claim(job_id, 60)

    page = operations.list_jobs(
        store, ALICE, status=JobStatus.PROCESSING, job_type="other", limit=10, cursor=None
    )

    assert [j.job_id for j in page.jobs] == ["a2"]


def test_a_query_page_the_filter_empties_moves_the_shard_on(pipeline: Pipeline, clock: Clock) -> None:
    """Broken line: `_query`'s `_position(response["LastEvaluatedKey"], index)` without `index`."""
    # one shard, so a one-job page reads the shard four items at a time (the smallest batch)
    store = store_from_env(pipeline.env, shards=1)
    for job_id, job_type in [("old", "other")] + [(f"new{n}", "echo") for n in range(6)]:
        clock.advance(1)
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=ALICE.owner))
        store.claim(job_id, 60)

    page = operations.list_jobs(
        store, OPERATOR, status=JobStatus.PROCESSING, job_type="other", limit=1, cursor=None
    )

    assert [j.job_id for j in page.jobs] == ["old"]


def test_the_operators_list_of_one_type_holds_every_owners_jobs_of_that_type_only(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Broken line: `list_query`'s operator `ListQuery(schema.CREATED_INDEX, ..., job_type, ...)` with
    `None` for `job_type` (the operator's unfiltered list came back whole)."""
    for job_id, job_type, owner in (
        ("a1", "echo", ALICE.owner),
        ("a2", "other", ALICE.owner),
        ("b1", "other", "b"),
    ):
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=owner))

    page = operations.list_jobs(store, OPERATOR, status=None, job_type="other", limit=10, cursor=None)

    assert sorted(j.job_id for j in page.jobs) == ["a2", "b1"]
