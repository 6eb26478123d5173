"""SQS access: the message shapes of the main queue and the dead-letter queue."""

import json
from collections.abc import Iterable, Mapping
from typing import Any

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


def job_message(job_id: str) -> str:
    """The main queue's message body: only what the worker needs to find the job."""
    return json.dumps({"jobId": job_id})


def parse_job_message(body: str) -> str:
    """The job id a message body names; MalformedMessageError when it names none."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        raise MalformedMessageError("body is not JSON") from None
    job_id = data.get("jobId") if isinstance(data, dict) else None
    if not isinstance(job_id, str) or not job_id:
        raise MalformedMessageError("body has no string jobId")
    return job_id


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

    def send(self, job_id: str, delay_seconds: int = 0, *, group: str = "") -> None:
        """One job's message; `group` is its owner (see `message_group`)."""
        self._sqs.send_message(
            QueueUrl=self.url,
            MessageBody=job_message(job_id),
            DelaySeconds=delay_seconds,
            MessageGroupId=message_group(group),
        )

    def send_many(self, job_ids: Iterable[str], *, group: str = "") -> list[str]:
        """Send one message per job in batches of ten; return the ids SQS did not accept."""
        ids = list(job_ids)
        failed: list[str] = []
        for start in range(0, len(ids), _SEND_BATCH_LIMIT):
            chunk = ids[start : start + _SEND_BATCH_LIMIT]
            entries = [
                {"Id": str(i), "MessageBody": job_message(job_id), "MessageGroupId": message_group(group)}
                for i, job_id in enumerate(chunk)
            ]
            response = self._sqs.send_message_batch(QueueUrl=self.url, Entries=entries)
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
