"""The dead-letter consumer: the one place where a job is declared lost and someone is told.

Messages reach the dead-letter queue three ways: the worker forwards a job it killed (a permanent
error or its last attempt failed) with the reason as a message attribute; SQS redrives a message that
was received more than `maxReceiveCount` times (a worker crashing on it); and the worker forwards a
message that names no job. Each becomes exactly one dead job (never over `done`) and one alert.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lambdas.models.job import JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.alerts import Alerts
from lambdas.store.jobs import JobStore
from lambdas.store.queue import MalformedMessageError, parse_job_message

_RAW_BODY_LIMIT = 4096


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    body: str
    reason: str | None
    receive_count: int

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "DeadLetter":
        attributes = record.get("messageAttributes") or {}
        reason = (attributes.get("reason") or {}).get("stringValue")
        count = int((record.get("attributes") or {}).get("ApproximateReceiveCount", "1"))
        return cls(record["messageId"], record["body"], reason, count)


class Verdict(StrEnum):
    ALERTED = "alerted"  # a job was declared dead and an alert went out
    POISON = "poison"  # a message naming no job; alerted with its raw body
    ALREADY_ALERTED = "already_alerted"
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
        # Marked after publishing: a crash in between repeats the alert rather than losing it.
        self._store.mark_alerted(job.job_id)
        return Verdict.ALERTED

    def _poison(self, letter: DeadLetter, reason: str) -> Verdict:
        logger.warning("poison message", reason=reason, messageId=letter.message_id)
        self._alerts.publish(
            "offload: unprocessable message on the dead-letter queue",
            {"reason": reason, "messageId": letter.message_id, "rawBody": letter.body[:_RAW_BODY_LIMIT]},
        )
        return Verdict.POISON
