"""A list page reads a bounded amount, whatever its filter leaves: no caller pays (in DynamoDB calls, in
the api function's time) for reading past another's entries. A page that spends its budget answers what
it found, maybe nothing, and a cursor; following the cursors still finds every match.

The calls are counted on the api function's own boto3 client (tests/support/calls.py). On main before
the budget: beta's `processing` page of one over 600 of alpha's running jobs made 156 Queries, a
`status=dead` children page of one over 1,000 children made 1,000 BatchGetItems.
"""

from typing import Any

import pytest

from lambdas import config
from lambdas.jobs.types.webhook_delivery import DELIVERY_TYPE, delivery_id
from lambdas.models.job import NewJob
from lambdas.store.jobs import JobStore
from tests.support.calls import record_params
from tests.support.pipeline import Pipeline

ALPHA = "alpha0key1"
BETA = "beta00key2"


def page(pipeline: Pipeline, path: str, key: str) -> dict[str, Any]:
    response = pipeline.request("GET", path, api_key_id=key)
    assert response.status == 200, response.body
    return dict(response.body)


def follow(pipeline: Pipeline, path: str, key: str, field: str) -> tuple[list[Any], int]:
    """Every item of a list through its cursors, and how many pages that took."""
    items: list[Any] = []
    cursor = None
    pages = 0
    while True:
        document = page(pipeline, path + (f"&cursor={cursor}" if cursor else ""), key)
        pages += 1
        items += document[field]
        cursor = document.get("nextCursor")
        if not cursor:
            return items, pages


def running(store: JobStore, owner: str, count: int, job_type: str = "test_echo") -> list[str]:
    ids = [f"{owner}-{n}" for n in range(count)]
    for job_id in ids:
        store.put_new(NewJob(job_id=job_id, job_type=job_type, payload={}, max_attempts=1, owner=owner))
        store.claim(job_id, 60)
    return ids


def test_a_page_of_running_jobs_does_not_read_through_another_clients(
    pipeline: Pipeline, store: JobStore
) -> None:
    """Seen to fail against main's `JobListing` without the budget (it read on through every one of
    alpha's entries)."""
    # given 300 of alpha's jobs running and one of beta's, the oldest
    beta_job = running(store, BETA, 1)[0]
    running(store, ALPHA, 300)
    queries = record_params("dynamodb", "Query")

    first = page(pipeline, "/jobs?status=processing&limit=1", BETA)

    assert len(queries) <= store.shards + config.PAGE_EXTRA_QUERIES
    assert sum(q["Limit"] for q in queries) <= config.PAGE_READ_ITEMS
    assert first["nextCursor"]  # cut short by its budget: an empty page that reads on
    found, _ = follow(pipeline, "/jobs?status=processing&limit=1", BETA, "jobs")
    assert [job["jobId"] for job in found] == [beta_job]


def test_a_type_nobody_submitted_costs_a_bounded_page(pipeline: Pipeline, store: JobStore) -> None:
    """Seen to fail against main's `JobListing` without the budget (every job of the caller read)."""
    running(store, ALPHA, 300)
    queries = record_params("dynamodb", "Query")

    page(pipeline, "/jobs?type=no_such_type&limit=1", ALPHA)

    assert len(queries) <= store.shards + config.PAGE_EXTRA_QUERIES


def fan_out(store: JobStore, owner: str, children: int) -> str:
    endpoints = [{"id": f"ep{n}", "url": f"https://x/{n}"} for n in range(children)]
    payload = {"eventType": "e", "data": {}, "endpoints": endpoints}
    store.put_new(
        NewJob(job_id="fan", job_type="webhook_fanout", payload=payload, max_attempts=2, owner=owner)
    )
    parent = store.claim("fan", 60)
    store.create_children(
        [
            NewJob(
                job_id=delivery_id("fan", e["id"]),
                job_type=DELIVERY_TYPE,
                payload={},
                max_attempts=2,
                parent_id="fan",
                owner=owner,
            )
            for e in endpoints
        ]
    )
    store.await_children(parent, children, {}, 60)
    return "fan"


@pytest.mark.parametrize("status", ["dead", None])
def test_a_children_page_reads_whole_batches_and_at_most_a_few(
    pipeline: Pipeline, store: JobStore, status: str | None
) -> None:
    """Seen to fail against main's `list_children` (one BatchGetItem per child under a filter: 1,000
    calls for a page of one)."""
    # given a fan-out of 1,000 children, the last one dead
    fan_out(store, ALPHA, 1000)
    last = delivery_id("fan", "ep999")
    store.fail(store.claim(last, 60), "refused")
    batches = record_params("dynamodb", "BatchGetItem")
    query = f"status={status}&limit=1" if status else "limit=1"

    first = page(pipeline, f"/jobs/fan/children?{query}", ALPHA)

    assert len(batches) <= (config.CHILD_PAGE_BATCHES if status else 1)
    assert all(len(b["RequestItems"][pipeline.env[config.ENV_JOBS_TABLE]]["Keys"]) <= 100 for b in batches)
    assert first["nextCursor"]
    if status:
        assert first["children"] == []
        found, pages = follow(pipeline, f"/jobs/fan/children?{query}", ALPHA, "children")
        assert [c["jobId"] for c in found] == [last]
        assert pages == 2
    else:
        assert [c["endpointId"] for c in first["children"]] == ["ep0"]


def test_beta_cannot_read_alphas_children(pipeline: Pipeline, store: JobStore) -> None:
    fan_out(store, ALPHA, 3)

    response = pipeline.request("GET", "/jobs/fan/children", api_key_id=BETA)

    assert response.status == 404
