"""One attempt of one job, from queue message to the job's next state.

Claim, run, then exactly one conditional write for the outcome:
- done: `succeed` (or `waiting` when the job handed its work to child jobs);
- retry: back to `pending` with the backoff as the message's new visibility timeout, and the message
  is reported as a batch item failure so SQS delivers it again when the backoff ends. The backoff and
  the window of retries are the type's retry policy's (`lambdas/lifecycle/attempt/backoff.py`); a failure past
  the window ends the job `dead`, saying so. Two retries leave this message instead (it is deleted):
  one waiting longer than SQS can delay a message (900 s) is `scheduled`, and the recovery sweep's
  hand-over sends it a fresh message when it is due (lambdas/lifecycle/sweeps/start_times.py); one after the
  MAX_ATTEMPTS_LIMIT-th attempt waits in a fresh message. Either way no message of a job is received
  more than MAX_ATTEMPTS_LIMIT times for its attempts, so SQS never redrives a retrying job to the DLQ;
- dead: `die`, then the message is forwarded to the dead-letter queue, whose consumer alerts; a type
  this function cannot run (unknown here, its module does not import, its settings missing) dies too,
  at once: no retry fixes the function's code or environment;
- wait: the job is over its type's limit (`lambdas/lifecycle/attempt/limits.py`, decided before the claim, so
  the job stays `pending` and its attempts are never touched) or raised `RetryLater` (back to `pending`,
  the attempt given back in the same write): it says what it waits for (`waitingFor`) and waits in a
  fresh message delayed until then (at most 900 s a message: a longer wait is a chain of them), and
  this one is deleted, so however long it waits SQS never counts it towards a redrive to the DLQ. Past
  LIMIT_MAX_WAIT_SECONDS of waiting in all, it is `dead` instead.
What the attempt recorded (a delivery's log line) commits with that write. A fan-out child's terminal
write also moves its fan-out's counters (their own item) and, when it is the last child, finishes
the parent (see `lambdas/store/children.py`); a parent that starts waiting after its children all finished finishes
itself. A message that cannot be claimed is a duplicate (dropped) unless it names no job (a poison
message, forwarded to the dead-letter queue with its raw body) or comes before its job's start time (a
reschedule moved it later: the message is made visible again when the job is due).
"""

import dataclasses
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import (
    AwaitChildren,
    ContinueLater,
    JobType,
    PermanentJobError,
    RetryableJobError,
    RetryLater,
)
from lambdas.lifecycle.attempt import parents
from lambdas.lifecycle.attempt.backoff import Retries, retries, span
from lambdas.lifecycle.attempt.batch_endings import BatchEndings, Place
from lambdas.lifecycle.attempt.capabilities import Recorded, WorkerCapabilities
from lambdas.lifecycle.attempt.limits import RESERVED_EARLY_SECONDS, Limits
from lambdas.lifecycle.ops_jobs.job import OPS_TYPE
from lambdas.lifecycle.workflows.start import Starter, start_workflow
from lambdas.models.job import Job, JobStatus, Priority
from lambdas.models.settings import WorkerSettings
from lambdas.models.waiting import LimitKind, WaitingFor
from lambdas.observability import log_transition, logger
from lambdas.redaction import redact, redact_value
from lambdas.store.errors import NotClaimableError, StaleAttemptError, WaitedTooLongError
from lambdas.store.jobs import Ended, JobStore
from lambdas.store.limits import LimitStore
from lambdas.store.queue import JobQueue, MalformedMessageError, Wait, death_letter, parse_job_message

if TYPE_CHECKING:  # Powertools' data classes load with the worker's first batch (lambdas.handlers.worker)
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord


@dataclass(frozen=True)
class QueueMessage:
    message_id: str
    receipt_handle: str
    body: str
    source_arn: str = ""  # the queue it came from: the group's queue or its high queue

    @classmethod
    def from_record(cls, record: "SQSRecord") -> "QueueMessage":
        # A hand-made event may name no source: its messages are taken as the function's queue's.
        return cls(record.message_id, record.receipt_handle, record.body, record.get("eventSourceARN") or "")


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    WAITING = "waiting"  # handed to child jobs
    RETRIED = "retried"
    RETRIED_LATER = "retried later"  # in a fresh message, or `scheduled` (this one is deleted)
    CONTINUED = "continued"  # the job goes on in a fresh message (this one is deleted)
    DEFERRED = "deferred"  # over a limit, or RetryLater: waits in a fresh message (this one is deleted)
    DEAD = "dead"
    STARTED = "started"  # a workflow handed to its durable execution (lambdas/lifecycle/workflows/start.py)
    DUPLICATE = "duplicate"  # another worker holds the job, or it is already finished
    EARLY = "early"  # the job was rescheduled later: the message comes back when it is due
    STALE = "stale"  # this attempt lost its lease; a newer attempt owns the job
    POISON = "poison"  # the message names no job
    ERROR = "error"  # the attempt could not record its outcome; SQS will deliver the message again


# Outcomes after which the message must stay on the queue (be reported in batchItemFailures).
_KEEP_MESSAGE = {Outcome.RETRIED, Outcome.ERROR, Outcome.EARLY}


@dataclass(frozen=True)
class MessageResult:
    message_id: str
    outcome: Outcome
    job_type: str | None = None
    duration_ms: float | None = None

    @property
    def kept(self) -> bool:
        """The message stays on the queue (reported in `batchItemFailures`), to be received again."""
        return self.outcome in _KEEP_MESSAGE


class Worker:
    def __init__(
        self,
        settings: WorkerSettings,
        store: JobStore,
        queue: JobQueue,
        dead_letters: JobQueue,
        rng: Callable[[], float] | None = None,
        limits: Limits | None = None,
        workflows: "Starter | None" = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._queue = queue
        self._dead_letters = dead_letters
        self._rng = rng
        self._capabilities = WorkerCapabilities(settings, store, queue)
        self._limits = limits or Limits(settings, LimitStore(settings.limits_table), settings.lease_seconds)
        self._workflows = workflows

    def process_batch(
        self, messages: list[QueueMessage], remaining_ms: Callable[[], int]
    ) -> list[MessageResult]:
        """Process a batch concurrently (bounded); never raises, every message gets a result."""
        if not messages:
            return []
        workers = min(self._settings.concurrency, len(messages))
        most = min(config.ENDING_TOGETHER_MAX_WAIT_SECONDS, self._settings.lease_seconds / 10)
        least = min(config.ENDING_TOGETHER_WAIT_SECONDS, most)
        batch = BatchEndings(self._store, len(messages), workers, least, most, remaining_ms)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="job") as pool:
            return list(pool.map(lambda m: self._process_safely(m, remaining_ms, batch.place()), messages))

    def _process_safely(
        self, message: QueueMessage, remaining_ms: Callable[[], int], place: Place
    ) -> MessageResult:
        try:
            return self.process(message, remaining_ms, place)
        except Exception:
            logger.exception(
                "message could not be processed; SQS will deliver it again", messageId=message.message_id
            )
            return MessageResult(message.message_id, Outcome.ERROR)
        finally:
            place.leave()
            logger.thread_safe_clear_keys()

    def process(
        self, message: QueueMessage, remaining_ms: Callable[[], int], place: Place | None = None
    ) -> MessageResult:
        """One message; with its `place` in a batch, a child's done may be written with its siblings'.

        Its limit's start is taken before the job is claimed: a refused start waits without a claim
        (`_wait`), so it never counts an attempt it would have to give back."""
        try:
            sent = parse_job_message(message.body)
        except MalformedMessageError as error:
            return self._poison(message, f"unreadable message: {error}")
        job_id = sent.job_id
        logger.thread_safe_append_keys(correlation_id=job_id, jobId=job_id)
        wait = sent.wait
        if (
            wait is not None
            and sent.job_type
            and sent.owner is not None
            and wait.until > self._store.now() + 1
        ):
            return self._wait(
                message, _Sent(job_id, sent.job_type, sent.owner, sent.priority), wait
            )  # a link of a long wait's chain
        admission = self._limits.admit(sent, lambda: self._store.get(job_id, counts=False))
        if admission.refused is not None:
            waiting = admission.refused
            sending = _Sent(job_id, admission.job_type, admission.owner, admission.priority)
            wait = Wait(waiting.key, waiting.until, admission.reserved, admission.pause)
            return self._wait(message, sending, wait, waiting)
        try:
            claim = self._store.claim_attempt(job_id, self._settings.lease_seconds)
        except NotClaimableError as refused:
            admission.release()
            return self._not_claimed(message, job_id, refused.job)
        job = claim.job
        if place is not None:
            place.claimed(job)
        # From `processing` when this attempt took over one whose lease had expired.
        log_transition(job.job_id, job.job_type, claim.previous, JobStatus.PROCESSING, job.attempts)
        try:
            if job.attempts > job.max_attempts:
                # Its last attempt's lease expired (the worker crashed or timed out): nothing left to spend.
                last = f" (last error: {job.last_error})" if job.last_error else ""
                return self._dead(message, job, f"no attempts left after {job.max_attempts}{last}")
            if place is not None:
                place.before_waiting = admission.release  # its work is done while it waits for siblings
            return self._run(message, job, remaining_ms, place)
        finally:
            admission.release()  # after the outcome is written: the slot is held for the whole attempt

    def _ops(self) -> JobType[Any]:
        """The lifecycle's own type, run with its store and queue: never a plug-in, never in the registry.
        Imported by the first ops job: only they need the listing and the API models."""
        from lambdas.lifecycle.ops_jobs.bulk import ops_job_type

        return ops_job_type(self._store, self._queue)

    def _run(
        self, message: QueueMessage, job: Job, remaining_ms: Callable[[], int], place: Place | None
    ) -> MessageResult:
        try:
            job_type: JobType[Any] = self._ops() if job.job_type == OPS_TYPE else registry.get(job.job_type)
            payload = job_type.payload_model.model_validate(job.payload)
        except registry.NotRegisteredError:
            return self._dead(message, job, f"unknown job type {job.job_type!r}")
        except registry.UnusableTypeError as error:
            return self._dead(message, job, str(error))
        except ValidationError as error:
            return self._dead(message, job, f"invalid payload: {error.error_count()} error(s): {error}")
        if job_type.workflow:
            return self._start_workflow(message, job)
        return self._attempt(message, job, job_type, payload, remaining_ms, place)

    def _attempt(
        self,
        message: QueueMessage,
        job: Job,
        job_type: JobType[Any],
        payload: Any,
        remaining_ms: Callable[[], int],
        place: Place | None,
    ) -> MessageResult:
        recorded = Recorded()
        try:
            context = self._capabilities.context(job, remaining_ms, recorded)
        except registry.UnusableTypeError as error:  # its settings, read as its context is built
            return self._dead(message, job, str(error))
        started = time.monotonic()
        # What the job says (its errors, its reason to wait, its result) is shown to its client and in
        # alerts: every secret value this process holds is redacted from it first.
        try:
            result = _redacted(job_type.run(payload, context))
        except PermanentJobError as error:
            return self._dead(message, job, redact(str(error)), started, recorded)
        except RetryLater as later:
            later = RetryLater(later.seconds, redact(later.reason), later.pause)
            return self._defer(message, job, self._later(job, job_type, later), recorded)
        except RetryableJobError as error:
            failure = _Failure(redact(str(error)), error.retry_after, started, recorded)
            return self._retry(message, job, self._retries(job_type), failure)
        except Exception as error:
            logger.exception("job raised an unexpected error; treating it as transient")
            failure = _Failure(redact(f"{type(error).__name__}: {error}"), None, started, recorded)
            return self._retry(message, job, self._retries(job_type), failure)
        return self._succeed(message, job, result, started, recorded, place)

    def _start_workflow(self, message: QueueMessage, job: Job) -> MessageResult:
        """The job runs in its durable execution from here on; this message is done."""
        if self._workflows is None:
            return self._dead(message, job, f"{job.job_type!r} is a workflow and this worker runs none")
        try:
            start_workflow(self._store.workflows(), self._workflows, job)
        except StaleAttemptError:
            return self._stale(message, job)
        return MessageResult(message.message_id, Outcome.STARTED, job.job_type)

    def _succeed(
        self,
        message: QueueMessage,
        job: Job,
        result: Any,
        started: float,
        recorded: Recorded,
        place: Place | None,
    ) -> MessageResult:
        elapsed = _elapsed_ms(started)
        try:
            if isinstance(result, ContinueLater | AwaitChildren):
                recorded.write_alone()  # these writes take no puts: what was recorded is written first
            if isinstance(result, ContinueLater):
                return self._continue(message, job, result, elapsed)
            if isinstance(result, AwaitChildren):
                return self._await(message, job, result, elapsed)
            ended = self._store.succeed(job, result, recorded.puts, place)
        except StaleAttemptError:
            return self._stale(message, job, recorded)
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.DONE, job.attempts)
        _log_finished_parent(ended)
        return MessageResult(message.message_id, Outcome.SUCCEEDED, job.job_type, elapsed)

    def _await(self, message: QueueMessage, job: Job, result: AwaitChildren, elapsed: float) -> MessageResult:
        waiting = self._store.await_children(
            job, result.total, result.result, check_after_seconds=self._settings.lease_seconds
        )
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.WAITING, job.attempts)
        if waiting is not None:
            # Its children may all have finished before it started waiting; then no child will finish it.
            parents.finish_if_complete(self._store, waiting)
        return MessageResult(message.message_id, Outcome.WAITING, job.job_type, elapsed)

    def _continue(
        self, message: QueueMessage, job: Job, later: ContinueLater, elapsed: float
    ) -> MessageResult:
        """The job saved its progress and goes on in a fresh message, now, without spending an attempt.

        A fresh message, not this one again: SQS counts every receive of a message against the queue's
        `maxReceiveCount`, so a job that continues more often than that would be redriven to the DLQ
        (and killed) mid-way. This message is deleted (not reported failed). If the send fails, this
        message is made visible again instead (it still counts; nothing is lost)."""
        try:
            self._store.continue_later(job, later.result)
        except StaleAttemptError:
            return self._stale(message, job)
        log_transition(
            job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.PENDING, job.attempts, "continues"
        )
        try:
            self._queue.send_job(job)
        except Exception:
            logger.exception("SendMessage failed for a continuation; its message is delivered again")
            self._queue.change_visibility(message.receipt_handle, 0, message.source_arn)
            return MessageResult(message.message_id, Outcome.RETRIED, job.job_type, elapsed)
        return MessageResult(message.message_id, Outcome.CONTINUED, job.job_type, elapsed)

    def _later(self, job: Job, job_type: JobType[Any], later: RetryLater) -> WaitingFor:
        until = self._store.now() + later.seconds
        if later.pause:
            paused = self._limits.pause(job, job_type, until)
            if paused is not None:
                return WaitingFor(LimitKind.PAUSED, paused[0], until, later.reason)
        return WaitingFor(LimitKind.RETRY_LATER, None, until, later.reason)

    def _wait(
        self, message: QueueMessage, sent: "_Sent", wait: Wait, waiting: WaitingFor | None = None
    ) -> MessageResult:
        """A refused start (`waiting`; without it, a link of a long wait's chain): the pending job, never
        claimed, says what it waits for, and waits in a fresh message delayed until `wait` ends (this one
        is deleted: however long it waits, SQS never redrives it). A start reserved for it travels in the
        message, which arrives a second or two early and is held in the worker until then."""
        now = self._store.now()
        counted = max(1, math.ceil(wait.until - now)) if waiting is not None else 0
        most = self._settings.limit_max_wait_seconds
        try:
            self._store.wait(sent.job_id, sent.owner, waiting, counted, most)
        except WaitedTooLongError as too_long:
            return self._waited_too_long(message, too_long, waiting, most)
        except NotClaimableError as refused:
            return self._not_claimed(message, sent.job_id, refused.job)
        # A reserved start's message comes a second or two early: an event source mapping may hold it a
        # moment to fill a batch, and a late start would delay the reserved ones after it.
        early = RESERVED_EARLY_SECONDS if wait.reserved else 0
        delay = min(max(0, math.floor(wait.until - now) - early), config.SQS_MAX_DELAY_SECONDS)
        try:
            self._queue.send_job(sent, delay, wait)
        except Exception:
            logger.exception("SendMessage failed for a waiting job; its message is delivered again")
            self._queue.change_visibility(message.receipt_handle, delay, message.source_arn)
            return MessageResult(message.message_id, Outcome.RETRIED, sent.job_type)
        kind = waiting.kind.value if waiting is not None else "chain"
        logger.info("waits", waitingFor=kind, key=wait.key, delaySeconds=delay)
        return MessageResult(message.message_id, Outcome.DEFERRED, sent.job_type)

    def _waited_too_long(
        self, message: QueueMessage, too_long: WaitedTooLongError, waiting: WaitingFor | None, most: int
    ) -> MessageResult:
        """Its waits would pass their bound: it is claimed only to be ended `dead`, saying why."""
        job = too_long.job
        assert job is not None
        try:
            claimed = self._store.claim_attempt(job.job_id, self._settings.lease_seconds).job
        except NotClaimableError as refused:
            return self._not_claimed(message, job.job_id, refused.job)
        return self._dead(message, claimed, _waited_too_long(job.waited_seconds, waiting, most))

    def _defer(
        self, message: QueueMessage, job: Job, waiting: WaitingFor, recorded: Recorded
    ) -> MessageResult:
        """The running job asked to run later (RetryLater): it waits in a fresh message, the attempt it
        used given back in the same write that ends it (see above)."""
        seconds = max(1, math.ceil(waiting.until - self._store.now()))
        most = self._settings.limit_max_wait_seconds
        if job.waited_seconds + seconds > most:
            return self._dead(message, job, _waited_too_long(job.waited_seconds, waiting, most))
        recorded.write_alone()
        try:
            self._store.defer(job, waiting, seconds)
        except StaleAttemptError:
            return self._stale(message, job)
        log_transition(
            job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.PENDING, job.attempts, "waits"
        )
        delay = min(seconds, config.SQS_MAX_DELAY_SECONDS)
        try:
            self._queue.send_job(job, delay, Wait(waiting.key, waiting.until))
        except Exception:
            logger.exception("SendMessage failed for a waiting job; its message is delivered again")
            self._queue.change_visibility(message.receipt_handle, delay, message.source_arn)
            return MessageResult(message.message_id, Outcome.RETRIED, job.job_type)
        logger.info("waits", waitingFor=waiting.kind.value, key=waiting.key, delaySeconds=delay)
        return MessageResult(message.message_id, Outcome.DEFERRED, job.job_type)

    def _retries(self, job_type: JobType[Any]) -> Retries:
        settings = self._settings
        return retries(
            job_type.name,
            job_type.retry,
            settings.retry_policies,
            settings.backoff_base_seconds,
            settings.backoff_cap_seconds,
        )

    def _retry(self, message: QueueMessage, job: Job, policy: Retries, failure: "_Failure") -> MessageResult:
        error, started, recorded = failure.error, failure.started, failure.recorded
        if job.attempts >= job.max_attempts:
            exhausted = f"attempts exhausted ({job.attempts}/{job.max_attempts}): {error}"
            return self._dead(message, job, exhausted, started, recorded)
        now = self._store.now()
        # Its first failure (in this life: a caller's retry starts `attempts` again) starts the window.
        since = job.retrying_since / 1000 if job.retrying_since and job.attempts > 1 else now
        delay = policy.delay(job.attempts, failure.retry_after, self._rng)
        if policy.window_seconds is not None:
            left = since + policy.window_seconds - now
            if left <= 0 or (failure.retry_after or 0) > left:
                passed = f"retry window of {span(policy.window_seconds)} passed after {job.attempts} attempts"
                return self._dead(message, job, f"{passed}: {error}", started, recorded)
            delay = min(delay, math.ceil(left))  # its last retry comes as its window ends
        scheduled = delay > config.SQS_MAX_DELAY_SECONDS
        try:
            self._store.retry(job, error, delay, recorded.puts, since, scheduled)
        except StaleAttemptError:
            return self._stale(message, job, recorded)
        next_status = JobStatus.SCHEDULED if scheduled else JobStatus.PENDING
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, next_status, job.attempts, error)
        logger.info("retry scheduled", delaySeconds=delay, attempt=job.attempts)
        outcome = Outcome.RETRIED_LATER if scheduled else self._retry_message(message, job, delay)
        return MessageResult(message.message_id, outcome, job.job_type, _elapsed_ms(started))

    def _retry_message(self, message: QueueMessage, job: Job, delay: int) -> Outcome:
        """The message of a retry due within SQS's longest delay: this one kept for its first
        MAX_ATTEMPTS_LIMIT attempts, then a fresh one (kept, it would be received once more per attempt,
        past the queue's maxReceiveCount). A `scheduled` retry has none until the sweep's hand-over."""
        if job.attempts < config.MAX_ATTEMPTS_LIMIT:
            self._queue.change_visibility(message.receipt_handle, delay, message.source_arn)
            return Outcome.RETRIED
        try:
            self._queue.send_job(job, delay)
        except Exception:
            logger.exception("SendMessage failed for a retry; its message is delivered again")
            self._queue.change_visibility(message.receipt_handle, delay, message.source_arn)
            return Outcome.RETRIED
        return Outcome.RETRIED_LATER

    def _dead(
        self,
        message: QueueMessage,
        job: Job,
        error: str,
        started: float | None = None,
        recorded: Recorded | None = None,
    ) -> MessageResult:
        recorded = recorded or Recorded()
        try:
            ended = self._store.die(job, error, recorded.puts)
        except StaleAttemptError:
            return self._stale(message, job, recorded)
        log_transition(job.job_id, job.job_type, JobStatus.PROCESSING, JobStatus.DEAD, job.attempts, error)
        _log_finished_parent(ended)
        self._forward(message, death_letter(job, error))
        elapsed = _elapsed_ms(started) if started is not None else None
        return MessageResult(message.message_id, Outcome.DEAD, job.job_type, elapsed)

    def _not_claimed(self, message: QueueMessage, job_id: str, job: Job | None) -> MessageResult:
        if job is None:
            return self._poison(message, f"no job {job_id}")
        if job.status is JobStatus.DEAD and not job.alerted:
            # Dead, but its alert was never raised (the forward to the DLQ failed): forward again.
            self._forward(message, death_letter(job, job.last_error or "dead"))
            return MessageResult(message.message_id, Outcome.DEAD, job.job_type)
        early = job.run_at / 1000 - self._store.now()
        if job.status is JobStatus.PENDING and early > 0:
            # Sent for the start time before a reschedule moved it later: back when the job is due.
            self._queue.change_visibility(message.receipt_handle, math.ceil(early), message.source_arn)
            return MessageResult(message.message_id, Outcome.EARLY, job.job_type)
        logger.info("duplicate message dropped", status=job.status.value)
        return MessageResult(message.message_id, Outcome.DUPLICATE, job.job_type)

    def _poison(self, message: QueueMessage, reason: str) -> MessageResult:
        logger.warning("poison message sent to the dead-letter queue", reason=reason)
        self._forward(message, {"reason": reason})
        return MessageResult(message.message_id, Outcome.POISON)

    def _stale(self, message: QueueMessage, job: Job, recorded: Recorded | None = None) -> MessageResult:
        logger.warning("attempt lost its lease; a newer attempt owns the job", attempt=job.attempts)
        if recorded is not None:
            recorded.write_alone()  # what this attempt did (a delivery it sent) stays in the log
        return MessageResult(message.message_id, Outcome.STALE, job.job_type)

    def _forward(self, message: QueueMessage, attributes: dict[str, str]) -> None:
        attributes = {k: v[:1000] for k, v in attributes.items()}
        self._dead_letters.forward(message.body, {**attributes, "sourceMessageId": message.message_id})


def _waited_too_long(waited: int, waiting: WaitingFor | None, most: int) -> str:
    why = f"waited {waited} s in all"
    if waiting is not None:
        why += f" ({waiting.kind.value} {waiting.key})" if waiting.key else f" ({waiting.kind.value})"
    return f"{why}; a job may wait at most {most} s (LIMIT_MAX_WAIT_SECONDS)"


@dataclass(frozen=True)
class _Failure:
    """A failed attempt: what it said, the least delay it asked for, and what it recorded."""

    error: str
    retry_after: float | None
    started: float
    recorded: Recorded


@dataclass(frozen=True)
class _Sent:
    """A waiting job as its message names it (the worker never read the job)."""

    job_id: str
    job_type: str
    owner: str
    priority: Priority


def _log_finished_parent(ended: Ended) -> None:
    parent = ended.parent_finished
    if parent is not None:
        log_transition(parent.job_id, parent.job_type, JobStatus.WAITING, JobStatus.DONE, parent.attempts)


def _elapsed_ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _redacted(result: Any) -> Any:
    """A run's result with every secret value redacted, a hand-over's (continue, await) inside it."""
    if isinstance(result, ContinueLater | AwaitChildren):
        return dataclasses.replace(result, result=redact_value(result.result))
    return redact_value(result)
