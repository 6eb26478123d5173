"""Each typed result has exactly the fields of its docs/openapi.json schema, so the client cannot drift."""

import json
from dataclasses import fields
from pathlib import Path

import pytest
from offload_client import (
    Child,
    Delivery,
    EventAccepted,
    Job,
    JobSummary,
    Limit,
    Schedule,
    Stats,
    Submitted,
    WebhookSecret,
)
from offload_client.models import camel, required

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
SCHEMAS = json.loads(OPENAPI.read_text())["components"]["schemas"]


# Each typed result and the schema it reads.
RESULTS: list[tuple[type, str]] = [
    (Submitted, "SubmitJobResponse"),
    (Job, "JobView"),
    (JobSummary, "JobSummary"),
    (Child, "ChildSummary"),
    (Delivery, "DeliveryView"),
    (Stats, "StatsView"),
    (Limit, "LimitView"),
    (Schedule, "ScheduleView"),
    (WebhookSecret, "WebhookSecretView"),
    (EventAccepted, "EventAccepted"),
]


@pytest.mark.parametrize(("model", "schema"), RESULTS)
def test_each_result_holds_the_fields_of_its_schema(model: type, schema: str) -> None:
    """Seen to fail with `history` removed from Job, and with a field added to JobSummary."""
    ours = {camel(f.name) for f in fields(model) if f.name != "raw"}
    assert ours == set(SCHEMAS[schema]["properties"])


def test_a_result_reads_camel_case_and_keeps_what_it_does_not_know() -> None:
    times = dict.fromkeys(("createdAt", "updatedAt", "statusAt"), "2026-01-01T00:00:00Z")
    job = JobSummary.from_api(
        {
            "jobId": "j-1",
            "type": "t",
            "status": "dead",
            "attempts": 5,
            "maxAttempts": 5,
            "priority": "low",
            **times,
        }
        | {"lastError": "boom", "newField": 1}
    )
    assert (job.job_id, job.status, job.max_attempts, job.last_error) == ("j-1", "dead", 5, "boom")
    assert job.priority == "low"
    assert job.parent_id is None
    assert job.raw["newField"] == 1


@pytest.mark.parametrize(("model", "schema"), RESULTS)
def test_a_result_requires_only_what_its_schema_requires(model: type, schema: str) -> None:
    """A field the client refuses to go without (not `| None`) is one the API always sends; otherwise an
    answer the API may give would raise IncompleteAnswer. Seen to fail with `Any` counted as required
    (`Job.result`, which a job not done has not)."""
    assert {camel(name) for name in required(model)} <= set(SCHEMAS[schema]["required"])
