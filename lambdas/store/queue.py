"""SQS access: the message shapes of the main queue and the dead-letter queue, and where a job's
message goes (`JobQueue.send_job`, the one place every job message is routed and sent from).

A job's message names the job, its type and its owner, so the worker can decide a limit's admission
before it claims the job (a refused start never touches the job's attempts); a message sent for a wait
also carries the wait: its limit key, its end (`until`), and whether that end is a start reserved for
this job (`reserved`: the limit counted it when it was handed out). A new child's message may carry
its limit key and pause without a wait (`Keyed`): a key read from the payload (a webhook's host) is
then known before the claim without reading the job, on a fan-out's hot path. A job that is not
`normal` names its priority, which orders its owner's waiters at a limit.

Priority also routes: a `high` job's message goes to its queue's high queue (`high`: queue URL -> its
high queue's URL), which the same worker function drains through an event source mapping of its own.
Lambda polls each mapping on its own pollers within its own maximum concurrency, so a backlog on the
queue never delays a message on the high queue (local_runtime/esm.py emulates the rule)."""

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lambdas import config
from lambdas.models.job import Job, Priority
from lambdas.store import clients
from lambdas.store.codec import NO_OWNER

_SEND_BATCH_LIMIT = 10
_PRIORITIES = frozenset(p.value for p in Priority)


class MalformedMessageError(ValueError):
    """A message body that names no job."""


def message_group(owner: str) -> str:
    """A message's `MessageGroupId`: its job's owner (a child's is its parent's). On a standard queue
    this makes it a fair queue: SQS serves a quiet client's messages first while another has a backlog."""
    return owner or NO_OWNER


class Routed(Protocol):
    """What routing a job's message needs to know of the job (a `Job` is one)."""

    @property
    def job_id(self) -> str: ...
    @property
    def job_type(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def priority(self) -> Priority: ...


@dataclass(frozen=True)
class Wait:
    """A wait a message carries: the limit key, its end (epoch seconds), and whether that end is a
    start reserved for the job."""

    key: str | None
    until: float
    reserved: bool = False
    pause: str | None = (
        None  # which receiver's pause holds the job (see `lambdas/lifecycle/attempt/limits.py`)
    )


@dataclass(frozen=True)
class Keyed:
    """A new job's limit key and receiver pause, worked out from its payload when its message is sent."""

    key: str
    pause: str


@dataclass(frozen=True)
class JobMessage:
    """A main-queue message as the worker reads it. `job_type` and `owner` are None in a message sent
    before messages carried them (the worker then reads the job); that branch can go once every stack
    has sent them for longer than MAIN_QUEUE_RETENTION_DAYS, when no older message is left."""

    job_id: str
    job_type: str | None = None
    owner: str | None = None
    wait: Wait | None = None
    keyed: Keyed | None = None  # a first start's key and pause, sent with the job (no wait)
    priority: Priority = Priority.NORMAL


def job_message(
    job_id: str,
    job_type: str | None = None,
    owner: str | None = None,
    wait: Wait | None = None,
    keyed: Keyed | None = None,
    priority: Priority = Priority.NORMAL,
) -> str:
    """The main queue's message body: what the worker needs to find the job and take its start."""
    body: dict[str, Any] = {"jobId": job_id}
    if job_type is not None:
        body["type"] = job_type
        body["owner"] = owner or ""
        if priority is not Priority.NORMAL:
            body["priority"] = priority.value
    if wait is not None:
        body["until"] = math.ceil(wait.until * 1000)
        if wait.key is not None:
            body["key"] = wait.key
        if wait.reserved:
            body["reserved"] = True
        if wait.pause is not None:
            body["pause"] = wait.pause
    elif keyed is not None and job_type is not None:
        body["key"], body["pause"] = keyed.key, keyed.pause
    return json.dumps(body, separators=(",", ":"))


def parse_job_message(body: str) -> JobMessage:
    """What a message body names; MalformedMessageError when it names no job."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        raise MalformedMessageError("body is not JSON") from None
    job_id = data.get("jobId") if isinstance(data, dict) else None
    if not isinstance(job_id, str) or not job_id:
        raise MalformedMessageError("body has no string jobId")
    assert isinstance(data, dict)
    job_type, owner, key, until = data.get("type"), data.get("owner"), data.get("key"), data.get("until")
    pause = data.get("pause")
    if not isinstance(job_type, str) or not isinstance(owner, str):
        return JobMessage(job_id)  # anything else it says is read from the job
    named = data.get("priority")
    priority = Priority(named) if named in _PRIORITIES else Priority.NORMAL
    wait = None
    if isinstance(until, int) and not isinstance(until, bool):
        wait = Wait(
            key if isinstance(key, str) else None,
            until / 1000,
            data.get("reserved") is True,
            pause if isinstance(pause, str) else None,
        )
    elif isinstance(key, str) and isinstance(pause, str):
        return JobMessage(job_id, job_type, owner, keyed=Keyed(key, pause), priority=priority)
    return JobMessage(job_id, job_type, owner, wait, priority=priority)


def death_letter(job: Job, reason: str) -> dict[str, str]:
    """A dead job's letter, the attributes of its message on the dead-letter queue: why, and which
    attempt died (`attemptTotal` never repeats, even across a caller's retry), so the consumer can tell
    it from a letter about a later life of the job."""
    return {
        "reason": reason[:1000],
        "jobId": job.job_id,
        "attempt": str(job.attempts),
        "attemptTotal": str(job.attempt_total),
    }


class JobQueue:
    """A function's job queue (`url`), the queues of the job types that run in functions of their own
    (`routes`: type -> URL), each queue's high queue (`high`: URL -> URL) and dead-letter queue
    (`dead_letters`: URL -> URL): a job is always sent to its type's queue, or to that queue's high
    queue when it is `high`, and its letter to that queue's dead-letter queue."""

    def __init__(
        self,
        queue_url: str,
        routes: Mapping[str, str] | None = None,
        high: Mapping[str, str] | None = None,
        dead_letters: Mapping[str, str] | None = None,
    ) -> None:
        self.url = queue_url
        self._routes = dict(routes or {})
        self._high = dict(high or {})
        self._dead_letters = dict(dead_letters or {})

    @property
    def _sqs(self) -> Any:
        return clients.client("sqs")

    def for_type(self, job_type: str) -> "JobQueue":
        """The queue of `job_type`'s function: this one for a type without a function of its own."""
        url = self._routes.get(job_type, self.url)
        return self if url == self.url else JobQueue(url, self._routes, self._high, self._dead_letters)

    def dead_letters_for(self, job_type: str) -> "JobQueue":
        """The dead-letter queue of `job_type`'s queue, where a letter about its dead job goes."""
        return JobQueue(self._dead_letters[self._routes.get(job_type, self.url)])

    def url_for(self, job_type: str, priority: Priority) -> str:
        """Where a job of `job_type` and `priority` is sent: the one routing rule."""
        url = self._routes.get(job_type, self.url)
        return self._high.get(url, url) if priority is Priority.HIGH else url

    def send_job(self, job: Routed, delay_seconds: int = 0, wait: Wait | None = None) -> None:
        """One job's message, on its type's queue (its high queue for a `high` job), in its owner's
        group (see `message_group`)."""
        self._sqs.send_message(
            QueueUrl=self.url_for(job.job_type, job.priority),
            MessageBody=job_message(job.job_id, job.job_type, job.owner, wait, priority=job.priority),
            DelaySeconds=delay_seconds,
            MessageGroupId=message_group(job.owner),
        )

    def send_new(
        self,
        job_type: str,
        owner: str,
        job_ids: Iterable[str],
        keyed: Mapping[str, Keyed] | None = None,
    ) -> list[str]:
        """New jobs' messages (one type, one owner) in batches of ten, each with its limit key when
        `keyed` names it; the ids SQS did not accept."""
        url = self.for_type(job_type).url
        ids = list(job_ids)
        failed: list[str] = []
        for start in range(0, len(ids), _SEND_BATCH_LIMIT):
            chunk = ids[start : start + _SEND_BATCH_LIMIT]
            entries = [
                {
                    "Id": str(i),
                    "MessageBody": job_message(job_id, job_type, owner, keyed=(keyed or {}).get(job_id)),
                    "MessageGroupId": message_group(owner),
                }
                for i, job_id in enumerate(chunk)
            ]
            response = self._sqs.send_message_batch(QueueUrl=url, Entries=entries)
            failed.extend(chunk[int(f["Id"])] for f in response.get("Failed", []))
        return failed

    def change_visibility(self, receipt_handle: str, seconds: int, source_arn: str = "") -> None:
        """Make a received message visible again in `seconds`: on the queue it came from (`source_arn`,
        a record's `eventSourceARN`: this queue or its high queue, the two this function drains)."""
        url = self.url
        high = self._high.get(self.url)
        if high is not None and source_arn and _queue_name(source_arn) == _queue_name(high):
            url = high
        self._sqs.change_message_visibility(
            QueueUrl=url,
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=max(0, min(seconds, config.SQS_MAX_VISIBILITY_SECONDS)),
        )

    def forward(self, body: str, attributes: Mapping[str, str], group: str = "") -> None:
        """Put a message on this queue as it was, with string attributes saying why it came."""
        self._sqs.send_message(
            QueueUrl=self.url,
            MessageBody=body,
            MessageGroupId=message_group(group),
            MessageAttributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()},
        )


def _queue_name(url_or_arn: str) -> str:
    """A queue's name, the last part of its URL (`.../account/name`) and of its ARN (`...:account:name`)."""
    return url_or_arn.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
