"""`send_email`: one message through Amazon SES (v2 SendEmail) to up to 50 recipients.

The sender is the stack's (CDK context `senderEmail`, env SENDER_EMAIL), never the payload's: the
context sends as that address only, so a caller can choose who receives mail, not who it claims to
come from.

SES's answer decides what happens next. Throttling, sending quotas and server errors are transient
(the job retries with backoff). A rejection that would repeat (an address SES refuses, a message it
rejects, an unverified sender, a suspended account) kills the job at once, without spending retries.
The result records SES's message id.

SES has no idempotency key: if a send times out after SES accepted it, the retry sends the message
again. Receivers see a duplicate at worst, never a silent loss.
"""

import re
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lambdas import config
from lambdas.jobs.base import Capability, JobContext, JobType, PermanentJobError, RetryableJobError
from lambdas.models.limits import Limit
from lambdas.models.retry import OUTAGE_RETRIES

NAME = "send_email"
MAX_RECIPIENTS = 50  # SES's limit per message
MAX_SUBJECT_CHARS = 998  # RFC 5322 line length
MAX_BODY_CHARS = 200_000

# A pragmatic address check: SES validates for real; this refuses what cannot be an address (and
# header injection) before a job is even stored.
_ADDRESS = re.compile(
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?=.{1,253}$)([A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,63}$"
)

# SES v2 error codes that will fail the same way every time.
_PERMANENT_CODES = frozenset(
    {
        "MessageRejected",
        "BadRequestException",
        "InvalidParameterValue",
        "MailFromDomainNotVerifiedException",
        "AccountSuspendedException",
        "NotFoundException",
        "ValidationException",
    }
)
# Quotas and pauses pass; retrying later is the right response.
_TRANSIENT_CODES = frozenset(
    {"TooManyRequestsException", "LimitExceededException", "SendingPausedException", "Throttling"}
)


def _check_address(value: str) -> str:
    address = value.strip()
    if not _ADDRESS.match(address) or ".." in address:
        raise ValueError(f"{value!r} is not a valid email address")
    return address


class SendEmailPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    to: list[str] = Field(min_length=1, max_length=MAX_RECIPIENTS, examples=[["ada@example.com"]])
    subject: str = Field(min_length=1, max_length=MAX_SUBJECT_CHARS)
    text: str | None = Field(default=None, min_length=1, max_length=MAX_BODY_CHARS)
    html: str | None = Field(default=None, min_length=1, max_length=MAX_BODY_CHARS)
    reply_to: str | None = Field(default=None, alias="replyTo")

    @field_validator("to")
    @classmethod
    def _recipients(cls, value: list[str]) -> list[str]:
        addresses = [_check_address(v) for v in value]
        if len({a.lower() for a in addresses}) != len(addresses):
            raise ValueError("recipients must not repeat")
        return addresses

    @field_validator("reply_to")
    @classmethod
    def _reply_to(cls, value: str | None) -> str | None:
        return None if value is None else _check_address(value)

    @field_validator("subject")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\r" in value or "\n" in value:
            raise ValueError("subject must be a single line")
        return value

    @model_validator(mode="after")
    def _has_body(self) -> "SendEmailPayload":
        if self.text is None and self.html is None:
            raise ValueError("give `text`, `html` or both")
        return self


def run(payload: SendEmailPayload, context: JobContext) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if payload.text is not None:
        body["Text"] = {"Data": payload.text, "Charset": "UTF-8"}
    if payload.html is not None:
        body["Html"] = {"Data": payload.html, "Charset": "UTF-8"}
    request: dict[str, Any] = {
        "Destination": {"ToAddresses": payload.to},
        "Content": {"Simple": {"Subject": {"Data": payload.subject, "Charset": "UTF-8"}, "Body": body}},
    }
    if payload.reply_to:
        request["ReplyToAddresses"] = [payload.reply_to]
    try:
        message_id = context.send_email(request)
    except ClientError as error:
        raise _translate(error) from None
    except BotoCoreError as error:  # connection errors, timeouts
        raise RetryableJobError(f"SES unreachable: {error}") from None
    return {"messageId": message_id, "recipients": len(payload.to)}


def _translate(error: ClientError) -> Exception:
    code = error.response.get("Error", {}).get("Code", "")
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    message = error.response.get("Error", {}).get("Message", "") or str(error)
    if code in _TRANSIENT_CODES or status == 429 or status >= 500:
        return RetryableJobError(f"SES {code or status}: {message}")
    if code in _PERMANENT_CODES or 400 <= status < 500:
        return PermanentJobError(f"SES rejected the message ({code or status}): {message}")
    return RetryableJobError(f"SES {code or status}: {message}")


# SES's account sending rate is a hard quota (14/s for a new production account): at most that many
# sends a second, whatever the backlog (CDK context sesPerSecond sets the account's own).
JOB_TYPE = JobType(
    name=NAME,
    payload_model=SendEmailPayload,
    run=run,
    limits=Limit(per_second=config.SES_PER_SECOND),
    retry=OUTAGE_RETRIES,
    uses=frozenset({Capability.EMAIL}),
)
