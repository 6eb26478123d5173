"""The api's routes act for the caller `rest.services` hands them (Powertools' `Depends`), read once
per request: what a route does follows that caller, and a refused caller stops every route that acts
for one before it does anything."""

from collections.abc import Iterator

import pytest

from lambdas import config
from lambdas.handlers import api
from lambdas.handlers.rest.services import request_caller
from lambdas.lifecycle.errors import ForbiddenError
from lambdas.models.caller import Caller
from tests.support.pipeline import Pipeline

EMAIL = {"to": ["someone@example.com"], "subject": "Hi", "text": "Hello"}
# Every route that acts for a caller and reads no body (those that read one check it first: 400).
BODILESS = [
    ("GET", "/jobs"),
    ("GET", "/jobs/j"),
    ("GET", "/jobs/j/children"),
    ("GET", "/jobs/j/deliveries"),
    ("POST", "/jobs/j/retry"),
    ("POST", "/jobs/j/cancel"),
    ("GET", "/stats"),
    ("GET", "/limits"),
    ("GET", "/webhook-secret"),
    ("GET", "/schedules"),
    ("GET", "/schedules/s"),
    ("DELETE", "/schedules/s"),
    ("POST", "/schedules/s/run"),
]


@pytest.fixture
def injected() -> Iterator[dict[object, object]]:
    overrides = api.app.dependency_overrides
    yield overrides
    overrides.clear()


def test_a_job_is_owned_by_the_injected_caller(pipeline: Pipeline, injected: dict[object, object]) -> None:
    """Seen to fail with `submit_job` reading its caller from the event's API key again
    (`caller_of(event.request_context.identity.api_key_id, ...)`): the job is then the event's key's."""
    injected[request_caller] = lambda: Caller("key-injected")
    submitted = pipeline.request("POST", "/jobs", {"type": "send_email", "payload": EMAIL})
    assert submitted.status == 202, submitted.body
    job_id = submitted.body["jobId"]
    assert pipeline.request("GET", f"/jobs/{job_id}").status == 200
    injected.clear()
    assert pipeline.request("GET", f"/jobs/{job_id}").status == 404  # the event's own key: not its job
    assert pipeline.request("GET", f"/jobs/{job_id}", api_key_id="key-injected").status == 200


@pytest.mark.parametrize(("method", "path"), BODILESS)
def test_a_refused_caller_stops_each_route_with_403(
    pipeline: Pipeline, injected: dict[object, object], method: str, path: str
) -> None:
    """The request comes with the operator's key, which every one of these routes serves (200, 404, ...),
    and the injected caller refuses it: the refusal (what an unmapped IAM principal gets) reaches the
    error map as the 403 it is, not as Powertools' wrapping of a failed dependency (a 500). Seen to
    fail, for GET /limits, with `get_limits` reading the caller from the event's key itself."""

    def refused() -> Caller:
        raise ForbiddenError("not one of offload's callers")

    injected[request_caller] = refused
    response = pipeline.request(method, path, api_key_id=pipeline.env[config.ENV_OPERATOR_KEY_ID])
    assert response.status == 403, (method, path, response.body)
    assert response.body["error"]["code"] == "forbidden"
