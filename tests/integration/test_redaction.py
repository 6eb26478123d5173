"""A secret never reaches what a client or an operator reads: a type's own token, raised or returned,
and one in the URL of a failed HTTP call, is `[redacted]` in the job's `lastError` and result, in the
dead-letter alert and in every log line of the worker."""

import json
from typing import Any

import boto3
import pytest
import requests
from pydantic import BaseModel

from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, RetryableJobError
from lambdas.redaction import REDACTED
from tests.support.pipeline import Pipeline
from tests.support.transitions import Lines

TOKEN = "tok_3f9a77c2e1b84d0c"
TYPE = "test_tokened"


class _Nothing(BaseModel):
    pass


def _raises_its_token(_: Any, context: JobContext) -> None:
    raise RetryableJobError(f"the partner refused token {context.secret('a_token')}")


def _calls_with_its_token_in_the_url(_: Any, context: JobContext) -> None:
    # Nothing listens on port 1: requests' ConnectionError names the whole URL, query string included.
    requests.get(f"http://127.0.0.1:1/v1/contacts?token={context.secret('a_token')}", timeout=2)


def _returns_its_token(_: Any, context: JobContext) -> dict[str, str]:
    return {"used": context.secret("a_token"), context.secret("a_token"): "as a key"}


@pytest.fixture
def tokened(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    """The type's secret, as the stack gives it to the worker that runs it."""
    arn = boto3.client("secretsmanager").create_secret(Name="a-token", SecretString=TOKEN)["ARN"]
    monkeypatch.setenv("JOB_SECRETS", json.dumps({TYPE: {"a_token": arn}}))
    return pipeline


@pytest.mark.parametrize(
    "run", [_raises_its_token, _calls_with_its_token_in_the_url], ids=["raised", "in a failed call's URL"]
)
def test_a_types_token_in_its_error_is_redacted_in_last_error_the_alert_and_the_logs(
    tokened: Pipeline, log_lines: Lines, run: Any
) -> None:
    """Seen to fail with `_attempt`'s `redact(...)` removed (the token in lastError and the alert), and
    with the logger's `RedactingFormatter` left out (the token in the traceback's log line)."""
    registry.register(JobType(TYPE, _Nothing, run, secrets=("a_token",)))
    job_id = tokened.submit(TYPE, {}, maxAttempts=1)

    tokened.run_worker()
    tokened.run_dead_letter()

    job = tokened.job(job_id)
    assert job["status"] == "dead"
    assert REDACTED in job["lastError"]
    (alert,) = tokened.alerts()
    assert REDACTED in alert["lastError"]
    logged = json.dumps(log_lines())
    assert TOKEN not in json.dumps([job, alert]) + logged
    if run is _calls_with_its_token_in_the_url:
        # the traceback was logged, the token cut out of it
        assert any(f"token={REDACTED}" in line.get("exception", "") for line in log_lines())


def test_a_types_token_in_its_result_is_redacted(tokened: Pipeline) -> None:
    """Seen to fail with `_redacted` returning the result as it is."""
    registry.register(JobType(TYPE, _Nothing, _returns_its_token, secrets=("a_token",)))
    job_id = tokened.submit(TYPE, {})

    tokened.run_worker()

    job = tokened.job(job_id)
    assert (job["status"], job["result"]) == ("done", {"used": REDACTED, REDACTED: "as a key"})
