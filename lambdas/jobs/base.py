"""What a job type is: the plug-in contract between the job lifecycle and the work itself.

A job type is one module of a package of job types (the built-in `lambdas/jobs/types/`, or a user's own:
`lambdas/jobs/packages.py`) that defines a pydantic payload model and a `run(payload, context)`
function, and exposes them as a `JobType`. `run` returns the job's result
(anything JSON-serialisable, or `AwaitChildren` when it handed its work to child jobs) or raises:

- `PermanentJobError` when the input can never succeed: the job goes to `dead` at once;
- `RetryableJobError` (or any other exception) for a transient failure: the job is retried with
  backoff until it runs out of attempts;
- `RetryLater(seconds)` when the job cannot run yet but is not failing (a partner asked to be called
  later): the job waits `pending` and runs again then, without spending an attempt, up to the most a
  job may wait in all (LIMIT_MAX_WAIT_SECONDS; then it is `dead`, saying so).

A type may declare `limits` (`lambdas.models.limits.Limit`): how many of its jobs run at once, how
fast they start, per key. A job over its limit waits the same way (lambdas/lifecycle/attempt/limits.py).
It may declare a `retry` policy (`RetryPolicy`: attempts, backoff base and cap, a window in all).

A type does its work only through its context: `JobContext` when it runs (in the worker),
`SubmissionContext` when the API checks a submission. Each capability below is a small protocol the
lifecycle layer implements on top of the store (`lambdas/lifecycle/attempt/capabilities.py`); no job type
touches AWS clients, tables or queues itself, so a type cannot reach what its function was not given.

A type declares the capabilities of its context it `uses` (`Capability`): the worker function that runs
it is granted the AWS actions those need and no others (infra/access.py), and the context refuses a
capability the type did not declare (`CapabilityNotDeclaredError`), locally as AWS would. A type that
declares nothing may only compute, read its parent and end its own job.

A type may also declare what it needs around its work (docs/job-types.md): a `settings_model` (its
values come from CDK context `jobSettings`, validated at synth and when the worker starts, and reach
`run` as `context.type_settings`), `secrets` by name (one Secrets Manager secret each, readable only by
the function that runs the type: `context.secret(name)`), and a `function` of its own
(`WorkerFunction`: timeout, memory, concurrency), which puts it in a worker function with its own queue.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from lambdas.models.deliveries import DeliveryAttempt
from lambdas.models.job import Job, NewJob
from lambdas.models.limits import Limit
from lambdas.models.retry import RetryPolicy
from lambdas.models.settings import ApiSettings, WorkerSettings
from lambdas.models.uploads import StoredObject

P = TypeVar("P", bound=BaseModel)


class JobError(Exception):
    """Base of the errors a job type raises on purpose."""


class PermanentJobError(JobError):
    """The input can never succeed; retrying would only repeat the failure."""


class RetryableJobError(JobError):
    """A transient failure. `retry_after` (seconds) is a lower bound for the next attempt's delay."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RetryLater(JobError):
    """Run this job again in `seconds`, without spending an attempt (it is not failing). `pause`: the jobs
    of this job's owner with its limit key and payload `url` wait until then too (a receiver's
    Retry-After speaks for its own URL and for the client it answered, never for another client)."""

    def __init__(self, seconds: float, reason: str = "", pause: bool = False) -> None:
        super().__init__(reason or f"asked to run again in {seconds:g} s")
        self.seconds = max(0.0, float(seconds))
        self.reason = reason
        self.pause = pause


class InvalidPayloadError(JobError):
    """The payload cannot be accepted: the API answers 422 with this message (and `details`, if any),
    and `code` as the error's code."""

    def __init__(
        self, message: str, details: list[dict[str, Any]] | None = None, code: str = "invalid_payload"
    ) -> None:
        super().__init__(message)
        self.details = details
        self.code = code


class UploadedFiles(Protocol):
    """The stack's uploads bucket, read side. Keys are those `POST /uploads` hands out."""

    @property
    def max_bytes(self) -> int:
        """Files larger than this are refused (the function's MAX_FILE_BYTES)."""
        ...

    def head(self, key: str) -> StoredObject:
        """UploadNotFoundError, or UploadAccessDeniedError when S3 will not say."""
        ...

    def download(self, key: str, sink: IO[bytes]) -> tuple[int, str]:
        """Stream the object into `sink`; (size, sha256 hex). UploadNotFoundError, UploadTooLargeError."""
        ...


class Results(Protocol):
    def put(self, name: str, data: bytes, content_type: str) -> str:
        """Write a file under this job's own results prefix; return its key."""
        ...


@dataclass(frozen=True)
class CreatedChildren:
    created: int  # children written now (the others existed: a repeated attempt)
    unsent: int  # written, but SQS refused their message: the recovery sweep sends them when overdue


# Write child jobs (idempotently, by id) and queue the new ones.
CreateChildren = Callable[[Sequence[NewJob]], CreatedChildren]
# An SES v2 SendEmail request without its sender (the stack's, always); returns SES's message id.
SendEmail = Callable[[Mapping[str, Any]], str]


class Capability(StrEnum):
    """A capability of `JobContext` beyond running its own job, which a type declares in `uses`."""

    UPLOADS = "uploads"  # context.uploads: read the client's uploaded files
    RESULTS = "results"  # context.results: write files under the job's results prefix
    CHILDREN = "children"  # context.create_children: write and queue child jobs
    EMAIL = "email"  # context.send_email: send through SES as the stack's sender
    WEBHOOK_SIGNING = "webhook_signing"  # context.signing_secrets: the client's webhook signing secrets
    DELIVERY_LOG = "delivery_log"  # context.record_delivery: write the webhook delivery log


class CapabilityNotDeclaredError(PermanentJobError):
    """A job used a capability of its context that its type does not declare in `uses`."""


class SecretNotDeclaredError(PermanentJobError):
    """`context.secret(name)` for a name the job's type did not declare in `secrets`."""


def _no_secrets(name: str) -> str:
    raise SecretNotDeclaredError(f"this job type declares no secret {name!r}")


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """What a running job may know about itself, and all it may do beyond computing."""

    job_id: str
    job_type: str
    attempt: int
    max_attempts: int
    parent_id: str | None = None
    owner: str = ""  # the job's client (its API key id); a child's is its parent's
    created_at: str = ""  # when the job was submitted (ISO 8601), as its record says
    remaining_ms: Callable[[], int]
    settings: WorkerSettings
    uploads: UploadedFiles
    results: Results
    create_children: CreateChildren
    read_parent: Callable[[], Job | None]  # None when there is no parent (any more)
    # The job's client's webhook signing secrets valid now, as stored: the current one first, then any
    # rotated-out one still in its overlap. Every delivery is signed with each.
    signing_secrets: Callable[[], Sequence[str]]
    send_email: SendEmail
    record_delivery: Callable[[DeliveryAttempt], None]
    # The type's own settings (an instance of its `settings_model`), None when it declares none.
    type_settings: Any = None
    # The value of a secret the type declared (cached for five minutes); SecretNotDeclaredError otherwise.
    secret: Callable[[str], str] = _no_secrets


class Flow(Protocol):
    """What a workflow type's `run(payload, flow)` may do (`JobType(workflow=True)`): each operation is
    checkpointed by Lambda's durable execution engine (`lambdas/lifecycle/workflows/`), so a replay after
    a crash, a sleep or an event returns what it returned the first time."""

    @property
    def context(self) -> JobContext:
        """The job's context (secrets, settings, email...), for its steps to use."""
        ...

    def step(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)`, once; its (JSON) result. RetryableJobError retries the step with backoff (its own
        attempts, up to the job's maxAttempts); PermanentJobError ends the workflow `dead`."""
        ...

    def sleep(self, name: str, seconds: float) -> None:
        """Wait `seconds` (1 s to a year), spending no compute."""
        ...

    def wait_for_event(self, name: str, timeout_seconds: float) -> Any:
        """The `data` of the job's next event called `name` (POST /jobs/{jobId}/events), or None when
        `timeout_seconds` pass first."""
        ...


@dataclass(frozen=True, kw_only=True)
class SubmissionContext:
    """What `check_submission` may use, in the API function."""

    settings: ApiSettings
    uploads: UploadedFiles


@dataclass(frozen=True)
class ContinueLater:
    """Returned by a job that used its time budget and saved its progress: the worker ends this attempt
    without counting it against `maxAttempts` and delivers the message again at once."""

    result: Any = None


@dataclass(frozen=True)
class AwaitChildren:
    """Returned by a job that created `total` child jobs; it finishes when they all have."""

    total: int
    result: Any = None


@dataclass(frozen=True)
class WorkerFunction:
    """What a type asks of the function that runs it; types asking the same share one function (and
    its queue and dead-letter queue). Left out (None), the shared worker's value applies."""

    timeout_seconds: int | None = None  # up to Lambda's 900
    memory_mb: int | None = None  # 128..10240
    max_concurrency: int | None = None  # concurrent invocations its queue may drive (2..1000)


@dataclass(frozen=True)
class ChildRef:
    """One child of a parent job, as the parent's type names it: its id and what the API shows of it."""

    job_id: str
    endpoint_id: str
    url: str


@dataclass(frozen=True)
class JobType(Generic[P]):
    name: str
    payload_model: type[P]
    # `run(payload, context)`; a workflow's is `run(payload, flow)` (a `Flow`).
    run: Callable[[P, Any], Any]
    # Extra checks at submission beyond the model (for example DNS look-ups); raise InvalidPayloadError.
    check_submission: Callable[[P, SubmissionContext], None] | None = None
    # Child-only types (a fan-out's deliveries) are not accepted by the public API.
    public: bool = True
    # A type whose jobs hand their work to children (`AwaitChildren`) says which children a stored
    # parent has, in order, from the parent alone: the lifecycle lists, retries, cancels and alerts
    # on them through this hook, never by reading the type's payload itself.
    children: Callable[[Job], Sequence[ChildRef]] | None = None
    # Flow control: a job over this limit waits `pending`, spending no attempt (CDK context `jobLimits`
    # overrides it per stack).
    limits: Limit | None = None
    settings_model: type[BaseModel] | None = None
    secrets: tuple[str, ...] = ()
    function: WorkerFunction | None = None
    # What of its context the type calls beyond its own job; its function may do that and no more.
    uses: frozenset[Capability] = frozenset()
    # How its failed attempts are retried (attempts, backoff, a window in all); CDK context
    # `retryPolicies` overrides it per stack. Unset fields are the stack's defaults.
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # A workflow: `run(payload, flow)` runs on Lambda's durable execution engine (`lambdas/lifecycle/workflows/`),
    # its steps checkpointed, sleeping and waiting for events without running (docs/job-types.md).
    workflow: bool = False
