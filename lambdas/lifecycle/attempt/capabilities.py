"""What a job type may do, implemented on the store: the capabilities of `JobContext` and
`SubmissionContext` (their contract is in `lambdas/jobs/base.py`).

The worker builds one `JobContext` per attempt from `WorkerCapabilities`; the API's submission checks
get a `SubmissionContext` built once per process from the API's settings. Each capability is bound to
the attempt it was made for: results go under the job's own prefix, the parent read is the job's own.
"""

import dataclasses
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final

from lambdas.jobs import registry
from lambdas.jobs.base import (
    Capability,
    CapabilityNotDeclaredError,
    CreatedChildren,
    JobContext,
    JobType,
    PermanentJobError,
    SubmissionContext,
)
from lambdas.lifecycle.attempt.limits import keyed
from lambdas.lifecycle.attempt.type_config import TypeConfig
from lambdas.lifecycle.requests.webhook_secrets import WebhookSecrets, webhook_secrets
from lambdas.models import settings
from lambdas.models.deliveries import DeliveryAttempt
from lambdas.models.job import Job, NewJob
from lambdas.models.settings import ApiSettings, UploadsSettings, WorkerSettings, forget_on_reset
from lambdas.models.uploads import StoredObject
from lambdas.models.webhook_secrets import ClientSecrets
from lambdas.store.clients import client
from lambdas.store.deliveries import DeliveryLog
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue
from lambdas.store.transactions import Put
from lambdas.store.uploads import Uploads, result_key

# A rotated webhook signing secret is picked up within a minute (its predecessor signs for 24 h more).
SECRET_MAX_AGE_SECONDS = 60


class UploadsBucket:
    """The uploads bucket, read side, with the function's file size limit, for one owner: an upload
    another key asked for reads as missing."""

    def __init__(self, uploads: UploadsSettings, owner: str) -> None:
        self._bucket = Uploads(uploads.uploads_bucket)
        self._max_bytes = uploads.max_file_bytes
        self._owner = owner

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    def head(self, key: str) -> StoredObject:
        return self._bucket.head(key, self._owner)

    def download(self, key: str, sink: IO[bytes]) -> tuple[int, str]:
        return self._bucket.download(key, sink, self._max_bytes, self._owner)


class JobResults:
    def __init__(self, bucket: Uploads, job_id: str) -> None:
        self._bucket = bucket
        self._job_id = job_id

    def put(self, name: str, data: bytes, content_type: str) -> str:
        key = result_key(self._job_id, name)
        self._bucket.put(key, data, content_type)
        return key


class Recorded:
    """What an attempt recorded (its delivery log lines), written with the attempt's outcome, in the
    same transaction: one call instead of two, and a line exists exactly when its outcome does. An
    outcome that could not be written (a stale attempt) writes the lines on their own (`write_alone`):
    the delivery they describe happened all the same."""

    def __init__(self) -> None:
        self._puts: list[Put] = []
        self._lock = threading.Lock()

    def add(self, put: Put) -> None:
        with self._lock:
            self._puts.append(put)

    @property
    def puts(self) -> tuple[Put, ...]:
        with self._lock:
            return tuple(self._puts)

    def write_alone(self) -> None:
        for put in self.puts:
            put.write_alone()


class ClientSecretsCache:
    """Each client's webhook secrets, read at most once a `SECRET_MAX_AGE_SECONDS` per process (one
    read for the threads that ask at the same time). Which of them still sign is decided at each
    signing, so a rotated-out secret stops exactly when its overlap ends, cached or not."""

    def __init__(self, secrets: WebhookSecrets) -> None:
        self._secrets = secrets
        self._lock = threading.Lock()
        self._read: dict[str, tuple[float, ClientSecrets]] = {}

    def signing(self, client: str) -> tuple[str, ...]:
        if not client:
            raise PermanentJobError("a job without a client cannot be signed for")
        now = self._secrets.now()
        with self._lock:
            cached = self._read.get(client)
            if cached is None or now - cached[0] >= SECRET_MAX_AGE_SECONDS:
                cached = (now, self._secrets.of(client))
                self._read[client] = cached
        return cached[1].signing(now)


# The JobContext field each capability is.
_FIELDS: Final[Mapping[str, str]] = {
    Capability.UPLOADS: "uploads",
    Capability.RESULTS: "results",
    Capability.CHILDREN: "create_children",
    Capability.WEBHOOK_SIGNING: "signing_secrets",
    Capability.EMAIL: "send_email",
    Capability.DELIVERY_LOG: "record_delivery",
}


class Undeclared:
    """What a job's context holds for a capability its type did not declare: any use of it fails the
    job at once. Deployed, the function's role would refuse the call; moto would not, so this refuses
    it here the same way, locally and in tests."""

    def __init__(self, job_type: str, capability: Capability) -> None:
        self._message = (
            f"job type {job_type!r} uses {capability.value!r} without declaring it "
            f"(JobType(uses={{Capability.{capability.name}, ...}}))"
        )

    def __call__(self, *_args: object, **_kwargs: object) -> Any:
        raise CapabilityNotDeclaredError(self._message)

    def __getattr__(self, _name: str) -> Any:
        raise CapabilityNotDeclaredError(self._message)


def declared_only(
    job_type: str, uses: frozenset[Capability], given: Mapping[Capability, Any]
) -> dict[str, Any]:
    """The `JobContext` fields of the capabilities `given`: those the type declared in `uses` as given,
    the others `Undeclared`. The worker's rule, and the test kit's (lambdas/testing.py)."""
    return {
        _FIELDS[capability]: value if capability in uses else Undeclared(job_type, capability)
        for capability, value in given.items()
    }


class WorkerCapabilities:
    """Everything the worker's job types may use, on the worker's store, queue and settings."""

    def __init__(self, worker: WorkerSettings, store: JobStore, queue: JobQueue) -> None:
        self._settings = worker
        self._store = store
        self._queue = queue
        self._results = Uploads(worker.uploads_bucket)
        self._deliveries = DeliveryLog(worker.deliveries_table, ttl_days=worker.finished_ttl_days)
        self._secrets = ClientSecretsCache(webhook_secrets(worker))
        # Each type's declared settings, checked now: a function given invalid ones fails its start.
        self._types = TypeConfig(worker)
        self._types.check()

    def context(
        self, job: Job, remaining_ms: Callable[[], int], recorded: Recorded | None = None
    ) -> JobContext:
        """The context of the claimed `job`'s attempt (a workflow's: of its execution). `recorded`
        collects what the attempt records, for its outcome's write."""
        record = functools.partial(self._record, recorded) if recorded else self._deliveries.record
        try:
            declared: JobType[Any] | None = registry.get(job.job_type)
        except registry.NotRegisteredError:  # the lifecycle's own ops jobs: no plug-in's capability
            declared = None
        owner = job.owner
        # Its first attempt ever cannot have written children before (attempts too: an item written
        # before attemptTotal existed counts it from this claim).
        first_run = job.attempt_total == 1 and job.attempts == 1
        given: dict[Capability, Any] = {
            Capability.UPLOADS: UploadsBucket(self._settings, owner),
            Capability.RESULTS: JobResults(self._results, job.job_id),
            Capability.CHILDREN: functools.partial(self._create_children, owner, first_run),
            Capability.WEBHOOK_SIGNING: functools.partial(self._secrets.signing, owner),
            Capability.EMAIL: self._send_email,
            Capability.DELIVERY_LOG: record,
        }
        return JobContext(
            job_id=job.job_id,
            job_type=job.job_type,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            parent_id=job.parent_id,
            owner=owner,
            created_at=job.created_at,
            remaining_ms=remaining_ms,
            settings=self._settings,
            read_parent=functools.partial(self._read_job, job.parent_id),
            **declared_only(job.job_type, declared.uses if declared else frozenset(), given),
            **(self._types.declared(declared) if declared else {}),
        )

    def _create_children(self, owner: str, first_run: bool, children: Sequence[NewJob]) -> CreatedChildren:
        # Children belong to their parent's owner, whatever the job type put in them.
        created = self._store.create_children(
            [dataclasses.replace(c, owner=owner) for c in children], first_run=first_run
        )
        written = set(created)
        unsent = 0
        overrides = self._settings.job_limits
        for job_type in sorted({c.job_type for c in children}):
            of_type = [c for c in children if c.job_type == job_type and c.job_id in written]
            ids = [c.job_id for c in of_type]
            # a key read from the payload (a delivery's host) rides in the message: no read to admit it
            keys = {c.job_id: k for c in of_type if (k := keyed(job_type, owner, c.payload, overrides))}
            unsent += len(self._queue.send_new(job_type, owner, ids, keys)) if ids else 0
        return CreatedChildren(created=len(created), unsent=unsent)

    def _record(self, recorded: Recorded, attempt: DeliveryAttempt) -> None:
        recorded.add(self._deliveries.entry(attempt))

    def _read_job(self, job_id: str | None) -> Job | None:
        # A child reads its parent's payload (the event), never its counts.
        return None if job_id is None else self._store.get(job_id, counts=False)

    def _send_email(self, request: Mapping[str, Any]) -> str:
        response = client("sesv2").send_email(**request, FromEmailAddress=self._settings.sender_email)
        return str(response["MessageId"])


def submission_context_for(api: ApiSettings, caller: str) -> SubmissionContext:
    """A submission's checks, for the key that submits: it may name only its own uploads."""
    return SubmissionContext(settings=api, uploads=UploadsBucket(api, caller))


def submission_context(caller: str) -> SubmissionContext:
    """The API function's, from its settings (loaded on first use)."""
    return submission_context_for(settings.api(), caller)


class _PowertoolsParameters:
    """Powertools keeps fetched parameters (and its clients) per process; tests forget them too."""

    @staticmethod
    def cache_clear() -> None:
        # Loaded here as where secrets are read (type_config, webhook_secrets): most functions read none.
        from aws_lambda_powertools.utilities import parameters

        parameters.clear_caches()


forget_on_reset(_PowertoolsParameters())
