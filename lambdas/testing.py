"""A test kit for job types: run a type's `run` and `check_submission` in your own tests, without AWS.

One import, as dramatiq's `StubBroker` or the durable SDK's test runner::

    from lambdas.testing import JobTypeRunner

    runner = JobTypeRunner(sync_crm.JOB_TYPE, settings={"crmUrl": url}, secrets={"crm_token": "t0ken"})
    assert runner.run({"contactId": "c-1"}) == {...}

`JobTypeRunner` gives the type the `JobContext` the worker would give it, with fakes in place of AWS:
uploads you add (`runner.uploads.add(key, data)`), results, children, emails and delivery lines kept in
lists you read back. The rules that are not AWS's own are the product's, not copies: a payload is read as
the API reads a submission (an invalid one raises `InvalidPayloadError`, the API's 422), the type's
settings as its worker validates them (`TypeSettingsError`), and `context.secret(name)` refuses a name
the type did not declare, as does every capability it did not declare in `uses`
(`CapabilityNotDeclaredError`). What the type raises (`PermanentJobError`, `RetryableJobError`,
`RetryLater`...) reaches the test as it would reach the worker.
"""

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Generic, TypeVar

from pydantic import BaseModel

from lambdas import config
from lambdas.jobs.base import Capability, CreatedChildren, JobContext, JobType, SubmissionContext
from lambdas.lifecycle.attempt.backoff import policy_attempts
from lambdas.lifecycle.attempt.capabilities import declared_only
from lambdas.lifecycle.attempt.type_config import TypeConfig
from lambdas.lifecycle.requests.submit import payload_of
from lambdas.models.deliveries import DeliveryAttempt
from lambdas.models.job import Job, NewJob
from lambdas.models.settings import ApiSettings, Environment, JobTypesSettings, WorkerSettings
from lambdas.models.uploads import StoredObject, UploadNotFoundError, UploadTooLargeError
from lambdas.store.uploads import result_key

P = TypeVar("P", bound=BaseModel)
E = TypeVar("E", bound=Environment)

OWNER = "test-client"  # the API key id the runner's jobs are submitted with
# The value of every resource name a function's settings require: the fakes never look them up.
_PLACEHOLDER = "offload-testing"


@dataclass(frozen=True)
class SentEmail:
    message_id: str
    request: Mapping[str, Any]  # the SES v2 SendEmail request, without its sender


@dataclass
class FakeUploads:
    """The uploads bucket as a type reads it: another client's upload reads as missing, as in S3."""

    owner: str = OWNER
    max_bytes: int = config.MAX_FILE_BYTES
    files: dict[str, tuple[bytes, StoredObject]] = field(default_factory=dict)

    def add(self, key: str, data: bytes, content_type: str | None = None, owner: str | None = None) -> str:
        """Store `data` at `key` (a key `POST /uploads` hands out), uploaded by `owner` (the runner's)."""
        self.files[key] = (
            data,
            StoredObject(len(data), content_type, self.owner if owner is None else owner),
        )
        return key

    def head(self, key: str) -> StoredObject:
        return self._read(key)[1]

    def download(self, key: str, sink: IO[bytes]) -> tuple[int, str]:
        data, stored = self._read(key)
        if stored.size > self.max_bytes:
            raise UploadTooLargeError(f"{key} is {stored.size} bytes; the limit is {self.max_bytes}")
        sink.write(data)
        return len(data), hashlib.sha256(data).hexdigest()

    def _read(self, key: str) -> tuple[bytes, StoredObject]:
        found = self.files.get(key)
        if found is None or found[1].owner != self.owner:
            raise UploadNotFoundError(f"nothing has been uploaded at {key}")
        return found


@dataclass
class FakeResults:
    job_id: str
    files: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # key: (data, content type)

    def put(self, name: str, data: bytes, content_type: str) -> str:
        key = result_key(self.job_id, name)
        self.files[key] = (data, content_type)
        return key


class JobTypeRunner(Generic[P]):
    """Runs one job type's attempts and submission checks against fakes, and keeps what they did.

    `settings`: the type's settings as CDK context `jobSettings` gives them (its `settings_model` reads
    them); `secrets`: the values of the secrets it declared; `environment`: the function's environment
    variables beyond the placeholders (`THUMBNAIL_SIZES`, `ALLOW_HTTP_WEBHOOKS`...); `parent`: what
    `context.read_parent()` answers; `remaining_ms`: the attempt's time left; `owner` and `created_at`:
    the client that submitted the job and when.
    """

    def __init__(
        self,
        job_type: JobType[P],
        *,
        settings: Mapping[str, Any] | None = None,
        secrets: Mapping[str, str] | None = None,
        environment: Mapping[str, str] | None = None,
        signing_secrets: Sequence[str] = ("whsec_dGVzdGluZy10ZXN0aW5nLXRlc3Rpbmc=",),
        parent: Job | None = None,
        remaining_ms: Callable[[], int] = lambda: 60_000,
        owner: str = OWNER,
        created_at: str = "2026-01-01T00:00:00.000Z",
    ) -> None:
        self.job_type = job_type
        self.owner = owner
        self.created_at = created_at
        self.worker_settings = _load(WorkerSettings, environment)
        self.api_settings = _load(ApiSettings, environment)
        values = dict(secrets or {})
        # The worker's own rules for settings and secrets, each secret's "ARN" being its name here.
        declared = JobTypesSettings.load(
            {
                config.ENV_JOB_SETTINGS: _json({job_type.name: dict(settings or {})}),
                config.ENV_JOB_SECRETS: _json({job_type.name: {name: name for name in values}}),
            }
        )
        self._declared = TypeConfig(declared, read_secret=values.__getitem__).declared(job_type)
        self.uploads = FakeUploads(owner=owner, max_bytes=self.worker_settings.max_file_bytes)
        self.signing_secrets = tuple(signing_secrets)
        self.parent = parent
        self.remaining_ms = remaining_ms
        self.results: dict[str, tuple[bytes, str]] = {}
        self.children: list[NewJob] = []
        self.emails: list[SentEmail] = []
        self.deliveries: list[DeliveryAttempt] = []
        self._job_ids = (f"job-{n}" for n in itertools.count(1))

    def run(
        self,
        payload: Mapping[str, Any] | P,
        *,
        job_id: str | None = None,
        attempt: int = 1,
        max_attempts: int | None = None,
    ) -> Any:
        """One attempt of a job of this type (a new job's, unless `job_id` names one again): its result,
        or what `run` raised."""
        context = self.context(job_id=job_id, attempt=attempt, max_attempts=max_attempts)
        return self.job_type.run(self._payload(payload), context)

    def check_submission(self, payload: Mapping[str, Any] | P) -> P:
        """What the API checks of a submission: the payload model, then the type's `check_submission`.
        The payload as read, or `InvalidPayloadError` (the API's 422)."""
        checked = self._payload(payload)
        if self.job_type.check_submission is not None:
            self.job_type.check_submission(
                checked, SubmissionContext(settings=self.api_settings, uploads=self.uploads)
            )
        return checked

    def context(
        self, *, job_id: str | None = None, attempt: int = 1, max_attempts: int | None = None
    ) -> JobContext:
        """The context of one attempt, for a test that calls the type's code itself; `max_attempts` is
        the type's retry policy's unless given, as a job submitted without `maxAttempts` gets."""
        job_id = job_id or next(self._job_ids)
        if max_attempts is None:
            max_attempts = policy_attempts(self.job_type.name, self.job_type.retry, {})
        results = FakeResults(job_id, self.results)
        return JobContext(
            job_id=job_id,
            job_type=self.job_type.name,
            attempt=attempt,
            max_attempts=max_attempts,
            parent_id=None if self.parent is None else self.parent.job_id,
            owner=self.owner,
            created_at=self.created_at,
            remaining_ms=self.remaining_ms,
            settings=self.worker_settings,
            read_parent=lambda: self.parent,
            # What the type did not declare in `uses` is refused, as the worker refuses it.
            **declared_only(
                self.job_type.name,
                self.job_type.uses,
                {
                    Capability.UPLOADS: self.uploads,
                    Capability.RESULTS: results,
                    Capability.CHILDREN: self._create_children,
                    Capability.WEBHOOK_SIGNING: lambda: self.signing_secrets,
                    Capability.EMAIL: self._send_email,
                    Capability.DELIVERY_LOG: self.deliveries.append,
                },
            ),
            **self._declared,
        )

    def _payload(self, payload: Mapping[str, Any] | P) -> P:
        if isinstance(payload, BaseModel):
            return payload
        return payload_of(self.job_type, payload)

    def _create_children(self, children: Sequence[NewJob]) -> CreatedChildren:
        # Idempotent by id, as the store is; the children are their parent's client's.
        known = {child.job_id for child in self.children}
        new = [child for child in children if child.job_id not in known]
        self.children.extend(dataclasses.replace(child, owner=self.owner) for child in new)
        return CreatedChildren(created=len(new), unsent=0)

    def _send_email(self, request: Mapping[str, Any]) -> str:
        sent = SentEmail(f"message-{len(self.emails) + 1}", dict(request))
        self.emails.append(sent)
        return sent.message_id


def _load(settings: type[E], environment: Mapping[str, str] | None) -> E:
    given = dict(environment or {})
    placeholders = {v.name: _PLACEHOLDER for v in settings.variables() if v.required}
    if config.ENV_IAM_CALLERS not in given:
        placeholders[config.ENV_OPERATOR_KEY_ID] = "operator"
    return settings.load({**placeholders, **given})


def _json(value: Any) -> str:
    return json.dumps(value)
