"""Accepting a job: validate, write it durably, then enqueue it.

The job record is written before the message is sent. If SendMessage fails after the put, the job is
still durable and `pending`; the recovery sweep sends its message once it is overdue. So the caller
gets 202 either way, and no accepted job depends on the queue call succeeding. A job with a start time
beyond the horizon is written `scheduled` and sent nothing yet (`start_times`).
"""

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ValidationError

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import InvalidPayloadError, JobType
from lambdas.lifecycle.attempt.backoff import policy_attempts
from lambdas.lifecycle.attempt.capabilities import submission_context
from lambdas.lifecycle.errors import (
    IdempotencyConflictError,
    JobTooLargeError,
    TooManyAttemptsError,
    UnknownJobTypeError,
)
from lambdas.lifecycle.sweeps.start_times import delay_until, send_if_pending
from lambdas.models.api import SubmitJobRequest
from lambdas.models.caller import Caller
from lambdas.models.job import Job, NewJob, Priority
from lambdas.observability import log_transition, logger
from lambdas.store.errors import ItemTooLargeError, JobExistsError
from lambdas.store.jobs import JobStore
from lambdas.store.queue import JobQueue

# Idempotent submissions get a job id derived from (caller, key): a replay finds the same item.
_IDEMPOTENCY_NAMESPACE = uuid.UUID("6f1c1d9e-3f5b-4c1e-9a57-0ffb0ad00b1d")

P = TypeVar("P", bound=BaseModel)


@dataclass(frozen=True)
class Submitted:
    job: Job
    created: bool


def _request_hash(request: SubmitJobRequest) -> str:
    # A `normal` request hashes as it did before priorities, so its retry still matches its job.
    unasked = {"priority"} if request.priority is Priority.NORMAL else None
    canonical = json.dumps(
        request.model_dump(mode="json", exclude=unasked), sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def payload_of(job_type: JobType[P], payload: Mapping[str, Any]) -> P:
    """A submitted payload as its type's model reads it; InvalidPayloadError (422) saying where not."""
    try:
        return job_type.payload_model.model_validate(payload)
    except ValidationError as error:
        details = [
            {"loc": ["payload", *error_item["loc"]], "msg": error_item["msg"], "type": error_item["type"]}
            for error_item in error.errors(include_url=False, include_input=False)
        ]
        raise InvalidPayloadError(f"payload is not a valid {job_type.name} payload", details) from None


def validated_payload(request: SubmitJobRequest, caller: str) -> dict[str, Any]:
    try:
        job_type = registry.get(request.type)
    except registry.NotRegisteredError:
        job_type = None
    if job_type is None or not job_type.public:
        known = ", ".join(t.name for t in registry.public_types())
        raise UnknownJobTypeError(f"unknown job type {request.type!r}; known types: {known}")
    payload = payload_of(job_type, request.payload)
    if job_type.check_submission is not None:
        job_type.check_submission(payload, submission_context(caller))
    return payload.model_dump(mode="json", by_alias=True, exclude_none=True)


def max_attempts(job_type: str, asked: int | None, overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """A new job's attempts: those asked for, else its type's retry policy's. A caller may ask for up to
    10 (as before policies), or for up to the policy's attempts when the type allows more: the policy is
    the type author's (and operator's) judgement of how long its failures last, a caller only tunes."""
    declared = registry.get(job_type).retry
    default = policy_attempts(job_type, declared, overrides)
    if asked is None:
        return default
    most = max(config.MAX_ATTEMPTS_LIMIT, default)
    if asked > most:
        raise TooManyAttemptsError(
            f"maxAttempts may be at most {most} for job type {job_type!r}; got {asked}"
        )
    return asked


def submit(
    request: SubmitJobRequest,
    store: JobStore,
    queue: JobQueue,
    caller: Caller,
    idempotency_key: str | None = None,
    horizon_seconds: int = config.SCHEDULE_HORIZON_SECONDS,
    retry_policies: Mapping[str, Mapping[str, Any]] | None = None,
) -> Submitted:
    """Store the caller's job and send its message; an Idempotency-Key is the caller's own (another
    caller's same key makes another job). Its submission checks see only the caller's own uploads."""
    delay = delay_until(request.run_at, request.delay_seconds, store.now())
    payload = validated_payload(request, caller.owner)
    # Resolved before the hash: a repeat of a request naming no attempts is the same request.
    attempts = max_attempts(request.type, request.max_attempts, retry_policies or {})
    request = request.model_copy(update={"max_attempts": attempts})
    request_hash = None
    if idempotency_key:
        job_id = str(uuid.uuid5(_IDEMPOTENCY_NAMESPACE, f"{caller.owner}\n{idempotency_key}"))
        request_hash = _request_hash(request)
    else:
        job_id = str(uuid.uuid4())
    new = NewJob(
        job_id=job_id,
        job_type=request.type,
        payload=payload,
        max_attempts=attempts,
        delay_seconds=delay,
        request_hash=request_hash,
        owner=caller.owner,
        horizon_seconds=horizon_seconds if request.run_at is not None or delay else 0,
        priority=request.priority,
    )
    try:
        job = store.put_new(new)
    except JobExistsError as exists:
        if exists.existing.request_hash != request_hash:
            raise IdempotencyConflictError(
                "this Idempotency-Key was already used with a different request body"
            ) from None
        return Submitted(exists.existing, created=False)
    except ItemTooLargeError as too_large:
        raise JobTooLargeError(too_large.size, too_large.limit) from None
    log_transition(job.job_id, job.job_type, "new", job.status, 0)
    try:
        send_if_pending(queue, job, store.now())
    except (ClientError, BotoCoreError):
        logger.exception("SendMessage failed after the job was stored; the recovery sweep will send it")
    return Submitted(job, created=True)
