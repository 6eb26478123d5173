"""The operations routes through the real api handler under moto: list, read, children, deliveries,
retry, cancel, bulk actions and stats, each scoped to the caller's API key.

Two clients (`ALPHA`, `BETA`: API key ids as API Gateway passes them) and the operator, whose key id
is the one the stack gives the api function. A job another client submitted answers exactly like a
job that does not exist.
"""

from typing import Any

import pytest

from lambdas import config
from tests.support.pipeline import ApiResponse, Pipeline

pytestmark = pytest.mark.usefixtures("test_types")

ALPHA = "alpha0key1"
BETA = "beta00key2"


@pytest.fixture
def operator(pipeline: Pipeline) -> str:
    return pipeline.env[config.ENV_OPERATOR_KEY_ID]


def call(pipeline: Pipeline, key: str, method: str, path: str, body: Any = None) -> ApiResponse:
    return pipeline.request(method, path, body, api_key_id=key)


def submit(pipeline: Pipeline, key: str, job_type: str = "test_echo", **extra: Any) -> str:
    return pipeline.submit(job_type, {}, api_key_id=key, **extra)


def dead_job(pipeline: Pipeline, key: str) -> str:
    job_id = pipeline.submit("test_permanent", {"value": "x"}, api_key_id=key)
    pipeline.drain()
    assert call(pipeline, key, "GET", f"/jobs/{job_id}").body["status"] == "dead"
    return job_id


def listed(pipeline: Pipeline, key: str, query: str = "") -> list[str]:
    response = call(pipeline, key, "GET", f"/jobs{query}")
    assert response.status == 200, response.body
    return [job["jobId"] for job in response.body["jobs"]]


def assert_error(response: ApiResponse, status: int, code: str) -> None:
    assert (response.status, response.body["error"]["code"]) == (status, code), response.body


# --- reading -----------------------------------------------------------------------------------------


def test_each_client_lists_only_its_own_jobs_and_the_operator_lists_all(
    pipeline: Pipeline, operator: str
) -> None:
    mine = [submit(pipeline, ALPHA) for _ in range(3)]
    theirs = [submit(pipeline, BETA) for _ in range(2)]

    assert sorted(listed(pipeline, ALPHA)) == sorted(mine)
    assert sorted(listed(pipeline, BETA)) == sorted(theirs)
    assert sorted(listed(pipeline, operator)) == sorted(mine + theirs)
    assert sorted(listed(pipeline, ALPHA, "?status=pending")) == sorted(mine)
    assert listed(pipeline, BETA, "?status=dead") == []


def test_a_list_pages_with_its_cursor_without_repeating_a_job(pipeline: Pipeline) -> None:
    submitted = {submit(pipeline, ALPHA) for _ in range(5)}
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = call(pipeline, ALPHA, "GET", f"/jobs{query}").body
        assert len(page["jobs"]) <= 2
        seen += [job["jobId"] for job in page["jobs"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted(submitted)
    summary = call(pipeline, ALPHA, "GET", "/jobs?limit=1").body["jobs"][0]
    assert set(summary) == {
        "jobId", "type", "status", "attempts", "maxAttempts", "createdAt", "updatedAt", "statusAt",
        "lastError", "parentId", "priority",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("?cursor=bm90LW91cnM", 400, "invalid_cursor"),
        ("?limit=0", 400, "invalid_request"),
        ("?limit=101", 400, "invalid_request"),
        ("?status=sleeping", 400, "invalid_request"),
        ("?type=", 400, "invalid_request"),
    ],
)
def test_bad_list_parameters_are_4xx(pipeline: Pipeline, query: str, status: int, code: str) -> None:
    assert_error(call(pipeline, ALPHA, "GET", f"/jobs{query}"), status, code)


def test_a_cursor_from_another_clients_list_is_refused(pipeline: Pipeline) -> None:
    for _ in range(3):
        submit(pipeline, BETA)
    cursor = call(pipeline, BETA, "GET", "/jobs?limit=1").body["nextCursor"]
    assert cursor
    assert_error(call(pipeline, ALPHA, "GET", f"/jobs?limit=1&cursor={cursor}"), 400, "invalid_cursor")


@pytest.mark.parametrize("suffix", ["", "/children", "/deliveries"])
def test_another_clients_job_is_not_found_exactly_like_a_missing_one(
    pipeline: Pipeline, operator: str, suffix: str
) -> None:
    job_id = submit(pipeline, ALPHA)
    theirs = call(pipeline, BETA, "GET", f"/jobs/{job_id}{suffix}")
    missing = call(pipeline, BETA, "GET", f"/jobs/no-such-job{suffix}")

    assert theirs.status == missing.status == 404
    assert theirs.body["error"]["code"] == missing.body["error"]["code"]
    assert theirs.body["error"]["message"] == missing.body["error"]["message"].replace("no-such-job", job_id)
    assert call(pipeline, ALPHA, "GET", f"/jobs/{job_id}{suffix}").status == 200
    assert call(pipeline, operator, "GET", f"/jobs/{job_id}{suffix}").status == 200


def test_a_job_without_children_has_empty_children_and_deliveries(pipeline: Pipeline) -> None:
    job_id = submit(pipeline, ALPHA)
    assert call(pipeline, ALPHA, "GET", f"/jobs/{job_id}/children").body == {
        "children": [],
        "nextCursor": None,
    }
    deliveries = call(pipeline, ALPHA, "GET", f"/jobs/{job_id}/deliveries").body
    assert deliveries == {"deliveries": [], "nextCursor": None}


def test_a_dead_job_tells_its_story(pipeline: Pipeline) -> None:
    job = call(pipeline, ALPHA, "GET", f"/jobs/{dead_job(pipeline, ALPHA)}").body
    assert job["statusAt"].endswith("Z")
    assert [(entry["attempt"], entry["outcome"]) for entry in job["history"]] == [(1, "dead")]
    assert "input can never succeed" in job["history"][0]["error"]


# --- acting ------------------------------------------------------------------------------------------


def test_a_client_retries_its_dead_job_once_and_cannot_touch_anothers(
    pipeline: Pipeline, operator: str
) -> None:
    job_id = dead_job(pipeline, ALPHA)

    assert_error(call(pipeline, BETA, "POST", f"/jobs/{job_id}/retry"), 404, "job_not_found")
    retried = call(pipeline, ALPHA, "POST", f"/jobs/{job_id}/retry")
    again = call(pipeline, ALPHA, "POST", f"/jobs/{job_id}/retry")

    assert (retried.status, retried.body) == (202, {"jobId": job_id, "status": "pending"})
    assert retried.headers["Location"].endswith(f"/jobs/{job_id}")
    assert_error(again, 409, "not_retryable")
    assert "pending" in again.body["error"]["message"]
    # The operator retries anyone's dead job.
    other = dead_job(pipeline, BETA)
    assert call(pipeline, operator, "POST", f"/jobs/{other}/retry").status == 202


def test_a_client_cancels_its_delayed_job_and_cannot_cancel_anothers(
    pipeline: Pipeline, operator: str
) -> None:
    job_id = submit(pipeline, ALPHA, delaySeconds=600)
    other = submit(pipeline, BETA, delaySeconds=600)

    assert_error(call(pipeline, BETA, "POST", f"/jobs/{job_id}/cancel"), 404, "job_not_found")
    cancelled = call(pipeline, ALPHA, "POST", f"/jobs/{job_id}/cancel")

    assert cancelled.status == 200
    assert (cancelled.body["jobId"], cancelled.body["status"]) == (job_id, "cancelled")
    assert_error(call(pipeline, ALPHA, "POST", f"/jobs/{job_id}/cancel"), 409, "not_cancellable")
    assert call(pipeline, operator, "POST", f"/jobs/{other}/cancel").body["status"] == "cancelled"


@pytest.mark.parametrize("action", ["retry", "cancel"])
def test_bulk_actions_are_the_operators_alone(pipeline: Pipeline, operator: str, action: str) -> None:
    assert_error(call(pipeline, ALPHA, "POST", f"/jobs/{action}", {}), 403, "forbidden")

    started = call(pipeline, operator, "POST", f"/jobs/{action}", {"limit": 10})

    assert started.status == 202, started.body
    ops_job = call(pipeline, operator, "GET", f"/jobs/{started.body['jobId']}").body
    assert ops_job["type"] == "bulk_action"
    assert started.headers["Location"].endswith(f"/jobs/{ops_job['jobId']}")
    # Clients never see it.
    assert call(pipeline, ALPHA, "GET", f"/jobs/{ops_job['jobId']}").status == 404


@pytest.mark.parametrize(
    "body", [{"limit": 0}, {"limit": 10_001}, {"status": "asleep"}, {"before": "yesterday"}]
)
def test_a_bad_bulk_filter_is_400(pipeline: Pipeline, operator: str, body: dict[str, Any]) -> None:
    assert_error(call(pipeline, operator, "POST", "/jobs/retry", body), 400, "invalid_request")


def test_a_bulk_action_job_cannot_be_submitted(pipeline: Pipeline, operator: str) -> None:
    response = call(pipeline, operator, "POST", "/jobs", {"type": "bulk_action", "payload": {}})
    assert response.status == 422
