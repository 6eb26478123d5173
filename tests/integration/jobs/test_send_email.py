"""send_email against moto's SES v2: what SES recorded, and how each SES answer ends the attempt."""

import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from lambdas import config
from lambdas.jobs.base import PermanentJobError, RetryableJobError
from lambdas.jobs.types import send_email
from lambdas.jobs.types.send_email import SendEmailPayload
from lambdas.models.settings import SettingsError
from lambdas.store import clients
from tests.support.contexts import job_context


def send(message: SendEmailPayload) -> dict:
    return send_email.run(message, job_context(job_type="send_email"))


def sent_messages():
    return ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages


def payload(**overrides) -> SendEmailPayload:
    fields = {
        "to": ["ada@example.com", "grace@example.org"],
        "subject": "Invoice in_42 paid",
        "text": "Thanks!",
    }
    fields.update(overrides)
    return SendEmailPayload.model_validate(fields)


def test_sends_from_the_stack_sender_and_records_the_message_id(stack):
    result = send(payload(html="<p>Thanks!</p>", replyTo="billing@example.com"))

    [message] = sent_messages()
    assert result == {"messageId": message.id, "recipients": 2}
    assert message.source == stack.sender
    assert message.destinations["ToAddresses"] == ["ada@example.com", "grace@example.org"]
    assert message.subject == "Invoice in_42 paid"
    assert message.body == "<p>Thanks!</p>"


def test_text_only_message(stack):
    send(payload())
    assert [m.body for m in sent_messages()] == ["Thanks!"]


def test_a_sender_ses_rejects_is_permanent(stack, monkeypatch):
    monkeypatch.setenv("SENDER_EMAIL", "someone@unverified.example.net")
    with pytest.raises(PermanentJobError, match="MessageRejected"):
        send(payload())
    assert sent_messages() == []


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("TooManyRequestsException", 429, RetryableJobError),
        ("LimitExceededException", 400, RetryableJobError),
        ("SendingPausedException", 400, RetryableJobError),
        ("InternalFailure", 500, RetryableJobError),
        ("ServiceUnavailable", 503, RetryableJobError),
        ("MessageRejected", 400, PermanentJobError),
        ("BadRequestException", 400, PermanentJobError),
        ("MailFromDomainNotVerifiedException", 400, PermanentJobError),
        ("AccountSuspendedException", 400, PermanentJobError),
    ],
)
def test_ses_errors(stack, code, status, expected):
    ses = clients.client("sesv2")
    with Stubber(ses) as stubber:
        stubber.add_client_error("send_email", service_error_code=code, http_status_code=status)
        with pytest.raises(expected, match=code):
            send(payload())
    assert sent_messages() == []


def test_unreachable_ses_is_retried(stack):
    def unreachable(**_):
        raise EndpointConnectionError(endpoint_url="https://email.us-east-1.amazonaws.com")

    clients.client("sesv2").meta.events.register("before-send.sesv2.SendEmail", unreachable)
    with pytest.raises(RetryableJobError, match="unreachable"):
        send(payload())


def test_missing_sender_configuration_fails_the_worker_at_start(stack, monkeypatch):
    monkeypatch.delenv(config.ENV_SENDER_EMAIL)
    with pytest.raises(SettingsError, match=config.ENV_SENDER_EMAIL):
        job_context(job_type="send_email")
