"""The job types' test kit (`lambdas.testing`): a user's tests see what the worker and the API would do.

Each test names the line that, broken, made it fail.
"""

import pytest
from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs.base import (
    AwaitChildren,
    InvalidPayloadError,
    JobContext,
    JobType,
    SecretNotDeclaredError,
)
from lambdas.jobs.types import register_builtin_types
from lambdas.jobs.types.process_file import JOB_TYPE as PROCESS_FILE
from lambdas.jobs.types.send_email import JOB_TYPE as SEND_EMAIL
from lambdas.jobs.types.webhook_fanout import JOB_TYPE as WEBHOOK_FANOUT
from lambdas.lifecycle.attempt.type_config import TypeSettingsError
from lambdas.testing import JobTypeRunner
from tests.support.doc_example import example_tests, install_example_type

KEY = "uploads/9b2e4c1a-6f0d-4e8b-a1c2-3d4e5f607182/photo.jpg"


class Greeting(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)


class GreetingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    salutation: str = Field(alias="salutation", pattern="^[A-Z]")


def greet(payload: Greeting, context: JobContext) -> str:
    return f"{context.type_settings.salutation} {payload.name}, {context.secret('signature')}"


GREET = JobType(
    name="greet", payload_model=Greeting, run=greet, settings_model=GreetingSettings, secrets=("signature",)
)


def test_a_run_gets_its_types_settings_and_declared_secrets() -> None:
    runner = JobTypeRunner(GREET, settings={"salutation": "Hello"}, secrets={"signature": "-- us"})

    assert runner.run({"name": "Ada"}) == "Hello Ada, -- us"


def test_a_secret_the_type_did_not_declare_is_refused_as_in_the_worker() -> None:
    """Seen to fail with the runner's `context.secret` reading the values it was given, unchecked."""
    runner = JobTypeRunner(GREET, settings={"salutation": "Hi"}, secrets={"signature": "s", "other": "x"})

    with pytest.raises(SecretNotDeclaredError):
        runner.context().secret("other")


def test_settings_the_types_model_refuses_fail_as_the_worker_fails_at_its_start() -> None:
    """Seen to fail with `TypeConfig(...).declared` left out of the runner (type_settings None)."""
    with pytest.raises(TypeSettingsError, match="greet"):
        JobTypeRunner(GREET, settings={"salutation": "lower case"})


def test_a_payload_is_read_as_the_api_reads_a_submission() -> None:
    """Seen to fail with the runner's payload read by `model_validate` (a ValidationError, not a 422)."""
    runner = JobTypeRunner(GREET, settings={"salutation": "Hi"}, secrets={"signature": "s"})

    with pytest.raises(InvalidPayloadError) as refused:
        runner.run({"name": ""})
    assert refused.value.details is not None
    assert refused.value.details[0]["loc"] == ["payload", "name"]


def test_check_submission_sees_only_the_runners_own_uploads() -> None:
    """Seen to fail with FakeUploads reading any client's upload."""
    runner = JobTypeRunner(PROCESS_FILE)
    runner.uploads.add(KEY, b"\xff\xd8 not much of a jpeg", content_type="image/jpeg", owner="someone-else")

    with pytest.raises(InvalidPayloadError) as refused:
        runner.check_submission({"key": KEY})
    assert refused.value.code == "upload_not_found"

    runner.uploads.add(KEY, b"\xff\xd8 not much of a jpeg", content_type="image/jpeg")
    assert runner.check_submission({"key": KEY}).key == KEY


def test_children_are_kept_once_each_as_their_parents_clients() -> None:
    """Seen to fail with `_create_children` keeping every child it is given (two runs, four children)."""
    runner = JobTypeRunner(WEBHOOK_FANOUT, owner="client-a")
    payload = {
        "eventType": "invoice.paid",
        "data": {"invoiceId": "in_1"},
        "endpoints": [
            {"id": "a", "url": "https://a.example/hook"},
            {"id": "b", "url": "https://b.example/hook"},
        ],
    }

    first = runner.run(payload, job_id="fanout-1")
    runner.run(payload, job_id="fanout-1", attempt=2)  # a second attempt creates nothing new

    assert isinstance(first, AwaitChildren)
    assert first.total == 2
    assert [(c.parent_id, c.owner) for c in runner.children] == [("fanout-1", "client-a")] * 2


def test_an_email_is_kept_with_its_request_and_answered_with_a_message_id() -> None:
    """Seen to fail with `_send_email` keeping nothing."""
    runner = JobTypeRunner(SEND_EMAIL)

    result = runner.run({"to": ["ada@example.com"], "subject": "Hi", "text": "Hello"})

    assert result["messageId"] == runner.emails[0].message_id
    assert runner.emails[0].request["Destination"] == {"ToAddresses": ["ada@example.com"]}


def test_the_documented_example_tests_pass(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """docs/job-types.md's tests of its example type, as printed. Seen to fail with FakeUploads reading any
    client's upload (the second test), and with `download` writing nothing (the first)."""
    install_example_type(monkeypatch, tmp_path)
    register_builtin_types()
    tests = example_tests()

    assert len(tests) == 2
    for test in tests.values():
        test()


def test_an_attempts_context_has_the_attempts_its_types_retry_policy_gives() -> None:
    """As a job submitted without `maxAttempts`: send_email's 25, a type without a policy the stack's 5.
    Broken line: `context`'s `max_attempts = policy_attempts(...)` as `max_attempts = 5`."""
    plain = JobType(name="greet", payload_model=Greeting, run=greet)
    assert JobTypeRunner(SEND_EMAIL).context().max_attempts == 25
    assert JobTypeRunner(plain).context().max_attempts == 5
    assert JobTypeRunner(SEND_EMAIL).context(max_attempts=2).max_attempts == 2
