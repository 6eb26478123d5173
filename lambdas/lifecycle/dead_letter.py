"""The dead-letter consumer: the one place where a job is declared lost and someone is told.

Messages reach the dead-letter queue three ways: the worker forwards a job it killed (a permanent
error or its last attempt failed) with the reason as a message attribute; SQS redrives a message that
was received more than `maxReceiveCount` times (a worker crashing on it); and the worker forwards a
message that names no job. Each becomes exactly one dead job (never over `done`) and one alert.

One alert, whatever the concurrency: before publishing, a consumer claims the alert with a conditional
write that holds for `ALERT_LEASE_SECONDS`. A second consumer that finds the claim held keeps its
letter on the queue (`Verdict.ALERT_PENDING`): by the time SQS delivers it again the alert is either
marked sent, or its claim has expired because the holder crashed before publishing, and this one
publishes instead. An alert may so be repeated after a crash, never lost.
"""

from dataclasses import dataclass
from enum import StrEnum

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from lambdas.models.job import AlertClaim, Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.alerts import Alerts
from lambdas.store.jobs import JobStore
from lambdas.store.queue import MalformedMessageError, parse_job_message

_RAW_BODY_LIMIT = 4096
# Longer than the dead_letter function's timeout (30 s), so a live holder never loses its claim, and
# shorter than the dead-letter queue's visibility timeout, so a letter kept back finds it expired.
ALERT_LEASE_SECONDS = 60


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    body: str
    reason: str | None
    receive_count: int

    @classmethod
    def from_record(cls, record: SQSRecord) -> "DeadLetter":
        reason = record.message_attributes["reason"]
        count = int(record.attributes.approximate_receive_count)
        return cls(record.message_id, record.body, reason.string_value if reason else None, count)


class Verdict(StrEnum):
    ALERTED = "alerted"  # a job was declared dead and an alert went out
    POISON = "poison"  # a message naming no job; alerted with its raw body
    ALREADY_ALERTED = "already_alerted"
    # Another consumer holds the alert's claim: the letter stays on the queue until it is settled.
    ALERT_PENDING = "alert_pending"
    SUCCEEDED_EARLIER = "succeeded_earlier"  # the job is done: nothing lost, nothing to say


class DeadLetterConsumer:
    def __init__(self, store: JobStore, alerts: Alerts) -> None:
        self._store = store
        self._alerts = alerts

    def handle(self, letter: DeadLetter) -> Verdict:
        reason = letter.reason or (
            "message was received too many times without being processed "
            f"(SQS redrive after {letter.receive_count} receives)"
        )
        try:
            job_id = parse_job_message(letter.body)
        except MalformedMessageError as error:
            return self._poison(letter, f"{reason}; {error}")
        before = self._store.get(job_id)
        job = self._store.mark_dead(job_id, reason)
        if job is None:
            if before is None:
                return self._poison(letter, f"no job {job_id}")
            logger.info("dead letter for a job that succeeded; ignored", jobId=job_id)
            return Verdict.SUCCEEDED_EARLIER
        if before is not None and before.status is not JobStatus.DEAD:
            log_transition(
                job.job_id, job.job_type, before.status, JobStatus.DEAD, job.attempts, job.last_error
            )
        if job.alerted:
            return Verdict.ALREADY_ALERTED
        return self._alert(job)

    def _alert(self, job: Job) -> Verdict:
        claim = self._store.claim_alert(job.job_id, ALERT_LEASE_SECONDS)
        if claim is AlertClaim.SENT:
            return Verdict.ALREADY_ALERTED
        if claim is AlertClaim.HELD:
            return Verdict.ALERT_PENDING
        try:
            self._alerts.publish(
                f"offload: job {job.job_type} {job.job_id} is dead",
                {
                    "jobId": job.job_id,
                    "jobType": job.job_type,
                    "attempts": job.attempts,
                    "maxAttempts": job.max_attempts,
                    "lastError": job.last_error,
                    "parentId": job.parent_id,
                },
            )
        except Exception:
            self._store.release_alert(job.job_id)
            raise
        # Marked after publishing: a crash in between repeats the alert (once its claim expires).
        self._store.mark_alerted(job.job_id)
        return Verdict.ALERTED

    def _poison(self, letter: DeadLetter, reason: str) -> Verdict:
        logger.warning("poison message", reason=reason, messageId=letter.message_id)
        self._alerts.publish(
            "offload: unprocessable message on the dead-letter queue",
            {"reason": reason, "messageId": letter.message_id, "rawBody": letter.body[:_RAW_BODY_LIMIT]},
        )
        return Verdict.POISON
