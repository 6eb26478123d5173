"""SQS access: the message shapes of the main queue and the dead-letter queue, and where a job's
message goes (`JobQueue.send_job`, the one place every job message is routed and sent from).

A job's message names the job, its type and its owner, so the worker can decide a limit's admission
before it claims the job (a refused start never touches the job's attempts); a message sent for a wait
also carries the wait: its limit key, its end (`until`), and whether that end is a start reserved for
this job (`reserved`: the limit counted it when it was handed out). A new child's message may carry
its limit key and pause without a wait (`Keyed`): a key read from the payload (a webhook's host) is
then known before the claim without reading the job, on a fan-out's hot path."""

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from lambdas import config
from lambdas.store import clients
from lambdas.store.codec import NO_OWNER

_SEND_BATCH_LIMIT = 10


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


@dataclass(frozen=True)
class Wait:
    """A wait a message carries: the limit key, its end (epoch seconds), and whether that end is a
    start reserved for the job."""

    key: str | None
    until: float
    reserved: bool = False
    pause: str | None = None  # which receiver's pause holds the job (see `lambdas/lifecycle/limits.py`)


@dataclass(frozen=True)
class Keyed:
    """A new job's limit key and receiver pause, worked out from its payload when its message is sent."""

    key: str
    pause: str


@dataclass(frozen=True)
class JobMessage:
    """A main-queue message as the worker reads it. `job_type` and `owner` are None in a message sent
    before messages carried them (the worker then reads the job)."""

    job_id: str
    job_type: str | None = None
    owner: str | None = None
    wait: Wait | None = None
    keyed: Keyed | None = None  # a first start's key and pause, sent with the job (no wait)


def job_message(
    job_id: str,
    job_type: str | None = None,
    owner: str | None = None,
    wait: Wait | None = None,
    keyed: Keyed | None = None,
) -> str:
    """The main queue's message body: what the worker needs to find the job and take its start."""
    body: dict[str, Any] = {"jobId": job_id}
    if job_type is not None:
        body["type"] = job_type
        body["owner"] = owner or ""
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
    wait = None
    if isinstance(until, int) and not isinstance(until, bool):
        wait = Wait(
            key if isinstance(key, str) else None,
            until / 1000,
            data.get("reserved") is True,
            pause if isinstance(pause, str) else None,
        )
    elif isinstance(key, str) and isinstance(pause, str):
        return JobMessage(job_id, job_type, owner, keyed=Keyed(key, pause))
    return JobMessage(job_id, job_type, owner, wait)


class JobQueue:
    """A function's job queue (`url`), and the queues of the job types that run in functions of their
    own (`routes`: type -> URL): a job is always sent to its type's queue."""

    def __init__(self, queue_url: str, routes: Mapping[str, str] | None = None) -> None:
        self.url = queue_url
        self._routes = dict(routes or {})

    @property
    def _sqs(self) -> Any:
        return clients.client("sqs")

    def for_type(self, job_type: str) -> "JobQueue":
        """The queue of `job_type`'s function: this one for a type without a function of its own."""
        url = self._routes.get(job_type, self.url)
        return self if url == self.url else JobQueue(url, self._routes)

    def send_job(self, job: Routed, delay_seconds: int = 0, wait: Wait | None = None) -> None:
        """One job's message, on its type's queue, in its owner's group (see `message_group`)."""
        self._sqs.send_message(
            QueueUrl=self.for_type(job.job_type).url,
            MessageBody=job_message(job.job_id, job.job_type, job.owner, wait),
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

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self._sqs.change_message_visibility(
            QueueUrl=self.url,
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
