"""What `send_email` accepts at submission (the API answers 422 for everything refused here)."""

import pytest
from pydantic import ValidationError

from lambdas.jobs.types.send_email import SendEmailPayload


def _payload(**overrides):
    base = {"to": ["ada@example.com"], "subject": "Your invoice", "text": "Hello"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def test_minimal_payload():
    payload = SendEmailPayload.model_validate(_payload())
    assert payload.to == ["ada@example.com"]
    assert payload.html is None


def test_html_only_and_reply_to_in_camel_case():
    payload = SendEmailPayload.model_validate(
        _payload(text=None, html="<p>Hi</p>", replyTo="help@example.org")
    )
    assert payload.reply_to == "help@example.org"
    assert payload.model_dump(by_alias=True, exclude_none=True)["replyTo"] == "help@example.org"


def test_fifty_recipients_is_the_limit():
    fifty = [f"user{i}@example.com" for i in range(50)]
    assert len(SendEmailPayload.model_validate(_payload(to=fifty)).to) == 50
    with pytest.raises(ValidationError):
        SendEmailPayload.model_validate(_payload(to=[*fifty, "one.more@example.com"]))


@pytest.mark.parametrize(
    "overrides",
    [
        {"to": []},
        {"to": "ada@example.com"},  # a list, not a string
        {"to": ["not-an-address"]},
        {"to": ["ada@example"]},
        {"to": ["ada@@example.com"]},
        {"to": ["a..b@example.com"]},
        {"to": ["ada@example.com\r\nBcc: everyone@example.com"]},
        {"to": ["ada@example.com", "ADA@example.com"]},
        {"subject": ""},
        {"subject": "Hi\r\nBcc: everyone@example.com"},
        {"subject": "x" * 999},
        {"text": None},  # neither text nor html
        {"text": ""},
        {"replyTo": "nobody"},
        {"from": "ceo@example.com"},  # the sender is the stack's, never the caller's
        {"sender": "ceo@example.com"},
    ],
)
def test_refused(overrides):
    with pytest.raises(ValidationError):
        SendEmailPayload.model_validate(_payload(**overrides))
