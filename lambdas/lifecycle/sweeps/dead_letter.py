"""The dead-letter consumer: the one place where a job is declared lost and someone is told.

Messages reach the dead-letter queue three ways: the worker forwards a job it killed (a permanent
error or its last attempt failed) with the reason as a message attribute; SQS redrives a message that
was received more than `maxReceiveCount` times (a worker crashing on it); and the worker forwards a
message that names no job. Each becomes exactly one dead job (never over `done`) and one alert.

One alert, whatever the concurrency: before publishing, a consumer claims the alert with a conditional
write that holds for `ALERT_LEASE_SECONDS`. A second consumer that finds the claim held keeps its
letter on the queue (`LetterVerdict.ALERT_PENDING`): by the time SQS delivers it again the alert is either
marked sent, or its claim has expired because the holder crashed before publishing, and this one
publishes instead. An alert may so be repeated after a crash, never lost.

Letters are fenced, because one can arrive long after its job moved on (a redelivered copy, or a
letter kept while SNS was failing, for up to the DLQ's retention): a letter the worker forwarded names
the attempt that died (`attemptTotal`) and only ever alerts for that death, never changing the job; a
redriven message kills the job only if no caller retried it since the message was sent (its
`SentTimestamp` against the job's `reopenedAt`). A letter about a job that has moved on is dropped.

A fan-out's children alert as one: a dead child's letter waits on the queue until its fan-out has
finished, then the first one raises the fan-out's single alert (its counts and first dead deliveries,
claimed on the parent like any alert) and the others find it sent. A child that dies before its parent
waits (the parent still running, or retrying after its own attempt failed) waits too; when the parent
ends without ever waiting, the parent's own alert is the fan-out's one.

Any other dead job alerts with its group, its (type, owner): the first death of a quiet group alerts at
once; the deaths that follow within the group's window (`alert_window_seconds`, 5 minutes by default)
are counted (`lambdas/store/alert_groups.py`) and reported together, with their count and the first
few job ids and errors, by one alert when the window ends. One letter of those held stays on the queue
as the group's timer: it comes back each visibility timeout of the queue (three minutes) and publishes
once the window is over, so the summary comes at most that late. An outage that kills 500 jobs of one
type and client sends two alerts, not 500.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from lambdas.lifecycle.attempt.parents import child_ids
from lambdas.models.job import AlertClaim, Job, JobStatus
from lambdas.observability import log_transition, logger
from lambdas.store.alert_groups import SAMPLE_SIZE, AlertGroup, AlertGroups, GroupState
from lambdas.store.alerts import Alerts
from lambdas.store.jobs import JobStore
from lambdas.store.queue import MalformedMessageError, parse_job_message

_RAW_BODY_LIMIT = 4096
# Longer than the dead_letter function's timeout (30 s), so a live holder never loses its claim, and
# shorter than the dead-letter queue's visibility timeout, so a letter kept back finds it expired.
ALERT_LEASE_SECONDS = 60
# A fan-out's alert names this many of its dead deliveries (its counts say how many there are).
FANOUT_ALERT_CHILDREN = 5
_CHILD_PAGE = 100


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    body: str
    reason: str | None
    receive_count: int
    attempt_total: int | None = None  # the attempt that died, when the worker forwarded the letter
    sent_at: int | None = None  # epoch ms SQS first enqueued the message (kept across a redrive)

    @classmethod
    def from_record(cls, record: SQSRecord) -> "DeadLetter":
        reason = record.message_attributes["reason"]
        attempt = record.message_attributes["attemptTotal"]
        sent = record.attributes.sent_timestamp
        return cls(
            record.message_id,
            record.body,
            reason.string_value if reason else None,
            int(record.attributes.approximate_receive_count),
            _number(attempt.string_value if attempt else None),
            _number(sent),
        )


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


class LetterVerdict(StrEnum):
    ALERTED = "alerted"  # a job was declared dead and an alert went out
    POISON = "poison"  # a message naming no job; alerted with its raw body
    ALREADY_ALERTED = "already_alerted"
    # Another consumer holds the alert's claim: the letter stays on the queue until it is settled.
    ALERT_PENDING = "alert_pending"
    SUCCEEDED_EARLIER = "succeeded_earlier"  # the job is done: nothing lost, nothing to say
    # The letter is about a past life of the job (retried since, or running again): dropped.
    MOVED_ON = "moved_on"
    # A dead delivery of a fan-out still running: the letter stays until the fan-out has finished.
    FANOUT_PENDING = "fanout_pending"
    # Counted in its (type, owner)'s group, whose next alert reports it: the letter is done.
    GROUPED = "grouped"
    # The group's timer: the letter stays until its group's window is over (then it publishes).
    GROUP_PENDING = "group_pending"


class DeadLetterConsumer:
    def __init__(
        self,
        store: JobStore,
        alerts: Alerts,
        groups: AlertGroups,
        window_seconds: int,
        counted: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._alerts = alerts
        self._groups = groups
        self._window_ms = window_seconds * 1000
        # Called once for each death an alert reports or will report: the stack's dead-jobs metric.
        self._counted = counted

    def handle(self, letter: DeadLetter) -> LetterVerdict:
        reason = letter.reason or (
            "message was received too many times without being processed "
            f"(SQS redrive after {letter.receive_count} receives)"
        )
        try:
            job_id = parse_job_message(letter.body).job_id
        except MalformedMessageError as error:
            return self._poison(letter, f"{reason}; {error}")
        if letter.attempt_total is not None:
            job = self._store.get(job_id)
            if job is None:
                return self._poison(letter, f"no job {job_id}")
            # The worker wrote this death itself; the letter only asks for its alert.
            if job.status is not JobStatus.DEAD or job.attempt_total != letter.attempt_total:
                return _moved_on(job, letter)
            return self._raise(job)
        before = self._store.get(job_id)
        job = self._store.mark_dead(job_id, reason, letter.sent_at)
        if job is None:
            if before is None:
                return self._poison(letter, f"no job {job_id}")
            logger.info("dead letter for a job that succeeded; ignored", jobId=job_id)
            return LetterVerdict.SUCCEEDED_EARLIER
        if job.status is not JobStatus.DEAD:
            return _moved_on(job, letter)
        if before is not None and before.status is not JobStatus.DEAD:
            log_transition(
                job.job_id, job.job_type, before.status, JobStatus.DEAD, job.attempts, job.last_error
            )
        return self._raise(job)

    def _raise(self, job: Job) -> LetterVerdict:
        """The alert for a dead job: its fan-out's when it is a fan-out's child, else its group's."""
        parent = self._store.get(job.parent_id) if job.parent_id else None
        if parent is not None and parent.children is not None:
            return self._raise_fanout(job, parent)
        if parent is not None and not parent.status.finished:
            return LetterVerdict.FANOUT_PENDING  # its parent has not waited for its children yet
        if parent is not None and parent.status is JobStatus.DEAD:
            # The parent died without waiting (its own attempts failed): its alert is the fan-out's one.
            self._store.mark_alerted(job.job_id)
            return LetterVerdict.ALREADY_ALERTED
        return self._raise_grouped(job)

    def _raise_grouped(self, job: Job) -> LetterVerdict:
        group = AlertGroup(job.job_type, job.owner)
        # Its death is counted once: under its alert's claim, as a job's own alert was before groups.
        claim = AlertClaim.SENT if job.alerted else self._store.claim_alert(job, ALERT_LEASE_SECONDS)
        if claim is AlertClaim.HELD:
            return LetterVerdict.ALERT_PENDING
        if claim is AlertClaim.MOVED:
            logger.info("job moved on before its death was counted; no alert", jobId=job.job_id)
            return LetterVerdict.MOVED_ON
        if claim is AlertClaim.SENT:  # counted before: this letter is back as its group's timer, or a copy
            return self._settle(group, job.job_id, self._groups.state(group), counted=True)
        try:
            state = self._groups.count(group, _death(job), self._store.now())
        except Exception:
            self._store.release_alert(job.job_id)
            raise
        # Marked after counting: a crash in between counts it again once its claim expires, never not at all.
        self._store.mark_alerted(job.job_id)
        self._counted()
        return self._settle(group, job.job_id, state, counted=False)

    def _settle(self, group: AlertGroup, job_id: str, state: GroupState, counted: bool) -> LetterVerdict:
        """Publish what the group holds if its window is over; else keep one letter as its timer."""
        now = int(self._store.now() * 1000)
        if state.sendable(now):
            claimed = self._groups.claim(group, now, self._window_ms, ALERT_LEASE_SECONDS * 1000)
            if claimed is not None:
                return self._publish_group(group, job_id, claimed)
            state = self._groups.state(group)
        if state.held <= 0:
            if state.timer != job_id or self._groups.drop_timer(group, job_id):
                return LetterVerdict.ALREADY_ALERTED if counted else LetterVerdict.GROUPED
            return LetterVerdict.GROUP_PENDING
        if self._groups.hold_timer(group, job_id):
            return LetterVerdict.GROUP_PENDING
        return LetterVerdict.ALREADY_ALERTED if counted else LetterVerdict.GROUPED

    def _publish_group(self, group: AlertGroup, job_id: str, claimed: GroupState) -> LetterVerdict:
        if claimed.held == 1 and claimed.sample:
            subject = f"offload: job {group.job_type} {claimed.sample[0]['jobId']} is dead"
        else:
            subject = f"offload: {claimed.held} jobs {group.job_type} dead ({group.owner or 'no owner'})"
        first = [_sampled(death) for death in claimed.sample[:SAMPLE_SIZE]]
        message = {
            # One death alone reads as it always did: that job's fields.
            **(first[0] if claimed.held == 1 and first else {}),
            "jobType": group.job_type,
            "owner": group.owner,
            "dead": claimed.held,
            "windowSeconds": self._window_ms // 1000,
            "firstDead": first,
        }
        try:
            self._alerts.publish(subject, message)
        except Exception:
            self._groups.release(group, claimed)
            raise
        after = self._groups.commit(group, claimed, job_id)
        # The publisher's letter watches what was counted while it published; it goes when nothing was.
        if after is None or self._groups.drop_timer(group, job_id):
            return LetterVerdict.ALERTED
        return LetterVerdict.GROUP_PENDING

    def _raise_fanout(self, child: Job, parent: Job) -> LetterVerdict:
        if not parent.status.finished:
            return LetterVerdict.FANOUT_PENDING
        if parent.alerted:
            verdict = LetterVerdict.ALREADY_ALERTED
        else:
            counts = parent.children
            assert counts is not None
            # SNS takes 100 characters of subject: the counts first, the type is in the message.
            subject = f"offload: {counts.dead} of {counts.total} dead in fan-out {parent.job_id}"
            verdict = self._alert(parent, subject, self._fanout_alert(parent))
        if verdict is LetterVerdict.ALERTED:
            self._counted()
        if verdict in (LetterVerdict.ALERTED, LetterVerdict.ALREADY_ALERTED):
            self._store.mark_alerted(child.job_id)  # its death is in its fan-out's alert
        return verdict

    def _fanout_alert(self, parent: Job) -> dict[str, Any]:
        counts = parent.children
        assert counts is not None
        ids = child_ids(parent)
        dead: list[Job] = []
        for start in range(0, len(ids), _CHILD_PAGE):
            page = self._store.get_many(ids[start : start + _CHILD_PAGE])
            dead.extend(c for c in page if c.status is JobStatus.DEAD)
            if len(dead) >= FANOUT_ALERT_CHILDREN:
                break
        return {
            "jobId": parent.job_id,
            "jobType": parent.job_type,
            "status": parent.status.value,
            "childrenTotal": counts.total,
            "childrenDone": counts.done,
            "childrenDead": counts.dead,
            "childrenCancelled": counts.cancelled,
            "deadChildren": [
                {"jobId": c.job_id, "attempts": c.attempts, "lastError": c.last_error}
                for c in sorted(dead, key=lambda c: ids.index(c.job_id))[:FANOUT_ALERT_CHILDREN]
            ],
        }

    def _alert(self, job: Job, subject: str, message: dict[str, Any]) -> LetterVerdict:
        claim = self._store.claim_alert(job, ALERT_LEASE_SECONDS)
        if claim is AlertClaim.SENT:
            return LetterVerdict.ALREADY_ALERTED
        if claim is AlertClaim.HELD:
            return LetterVerdict.ALERT_PENDING
        if claim is AlertClaim.MOVED:
            logger.info("job moved on before its alert was claimed; no alert", jobId=job.job_id)
            return LetterVerdict.MOVED_ON
        try:
            self._alerts.publish(subject, message)
        except Exception:
            self._store.release_alert(job.job_id)
            raise
        # Marked after publishing: a crash in between repeats the alert (once its claim expires).
        self._store.mark_alerted(job.job_id)
        return LetterVerdict.ALERTED

    def _poison(self, letter: DeadLetter, reason: str) -> LetterVerdict:
        logger.warning("poison message", reason=reason, messageId=letter.message_id)
        self._counted()
        self._alerts.publish(
            "offload: unprocessable message on the dead-letter queue",
            {"reason": reason, "messageId": letter.message_id, "rawBody": letter.body[:_RAW_BODY_LIMIT]},
        )
        return LetterVerdict.POISON


def _death(job: Job) -> dict[str, Any]:
    return {
        "jobId": job.job_id,
        "attempts": job.attempts,
        "maxAttempts": job.max_attempts,
        "lastError": job.last_error,
        "parentId": job.parent_id,
    }


def _sampled(death: Mapping[str, Any]) -> dict[str, Any]:
    """A death as the group's item gave it back (DynamoDB's numbers are Decimals)."""
    return {name: int(value) if isinstance(value, Decimal) else value for name, value in death.items()}


def _moved_on(job: Job, letter: DeadLetter) -> LetterVerdict:
    logger.info(
        "dead letter about a past life of its job; dropped",
        jobId=job.job_id,
        status=job.status.value,
        letterAttempt=letter.attempt_total,
        attemptTotal=job.attempt_total,
    )
    return LetterVerdict.MOVED_ON
