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
from offload_client.models import camel

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
SCHEMAS = json.loads(OPENAPI.read_text())["components"]["schemas"]


@pytest.mark.parametrize(
    ("model", "schema"),
    [
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
    ],
)
def test_each_result_holds_the_fields_of_its_schema(model: type, schema: str) -> None:
    """Seen to fail with `history` removed from Job, and with a field added to JobSummary."""
    ours = {camel(f.name) for f in fields(model) if f.name != "raw"}
    assert ours == set(SCHEMAS[schema]["properties"])


def test_a_result_reads_camel_case_and_keeps_what_it_does_not_know() -> None:
    job = JobSummary.from_api(
        {"jobId": "j-1", "status": "dead", "maxAttempts": 5, "lastError": "boom", "newField": 1}
    )
    assert (job.job_id, job.status, job.max_attempts, job.last_error) == ("j-1", "dead", 5, "boom")
    assert job.parent_id is None
    assert job.raw["newField"] == 1
