"""An `Idempotency-Key` replay is recognised by what the body says, not how its JSON is laid out; an
unknown type's refusal lists the types there are; a job's payload reads back as it was submitted.

Found by `make mutate` (mutants of `submit` no test failed on). Each test was first run against the
one-line break its docstring names, seen to fail, then restored.
"""

import pytest

from lambdas.jobs import registry
from tests.support.pipeline import Pipeline

pytestmark = pytest.mark.usefixtures("test_types")


def test_a_replay_whose_payload_lists_its_fields_in_another_order_is_the_same_request(
    pipeline: Pipeline,
) -> None:
    """Broken line: `_request_hash`'s `json.dumps(..., sort_keys=True, ...)` without `sort_keys`."""
    headers = {"Idempotency-Key": "order-44"}
    first = pipeline.request(
        "POST",
        "/jobs",
        {"type": "test_flaky", "payload": {"failTimes": 0, "retryAfter": 1.5}},
        headers=headers,
    )
    again = pipeline.request(
        "POST",
        "/jobs",
        {"payload": {"retryAfter": 1.5, "failTimes": 0}, "type": "test_flaky"},
        headers=headers,
    )

    assert (first.status, again.status) == (202, 202)
    assert again.body["jobId"] == first.body["jobId"]


def test_an_unknown_type_is_refused_with_the_types_that_exist(pipeline: Pipeline) -> None:
    """Broken line: `_validated_payload`'s `known = ", ".join(...)` as `known = None`."""
    response = pipeline.request("POST", "/jobs", {"type": "no_such_type", "payload": {}})

    assert response.status // 100 == 4
    known = ", ".join(t.name for t in registry.public_types())
    assert known
    assert response.body["error"]["message"] == f"unknown job type 'no_such_type'; known types: {known}"


def test_a_jobs_payload_reads_back_without_the_optional_fields_the_caller_left_out(
    pipeline: Pipeline,
) -> None:
    """Broken line: `_validated_payload`'s `model_dump(..., exclude_none=True)` as `exclude_none=False`."""
    payload = {"to": ["ada@example.com"], "subject": "Invoice", "text": "Attached."}

    job = pipeline.job(pipeline.submit("send_email", payload))

    assert job["payload"] == payload
