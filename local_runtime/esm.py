"""An SQS event source mapping, emulated with the semantics AWS documents for Lambda's SQS pollers.

- Pollers long-poll the queue (taking turns) and gather up to `BatchSize` messages, waiting at most
  `MaximumBatchingWindowInSeconds` after the first one; at most `MaximumConcurrency` batches run at once.
- Each mapping polls and invokes on its own: two mappings of one function (a worker group's queue and
  its high queue) each run up to their own `MaximumConcurrency` batches, so one queue's backlog never
  delays the other's messages. The function's pool holds the sum of its mappings' concurrency (the
  runtime sizes it so), as Lambda scales a function's mappings apart within its concurrency.
- Messages are received with the queue's own visibility timeout (nothing is overridden).
- A function error or timeout deletes nothing: the whole batch comes back when its visibility
  timeout ends.
- Without `ReportBatchItemFailures` a successful invocation deletes the whole batch. With it, only
  the reported messages stay; an empty or missing list (or no response) deletes them all; an
  identifier that is empty, missing, or not a message of the batch fails the whole batch.

The record builder (`sqs_record`), the receive (`receive_messages`) and the deletion rules
(`settled_records`, `delete_records`) are functions, so the in-process test pipeline
(tests/support/pipeline.py) delivers exactly as this poller does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from local_runtime.lambda_pool import Invocation
from local_runtime.template import EventSourceMapping

# Lambda invokes with at most 6 MB of records.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
# AWS starts five pollers per mapping when no maximum concurrency is set; so do we.
DEFAULT_CONCURRENCY = 5
# How far apart the pollers of one mapping start receiving.
POLLER_RAMP_SECONDS = 0.5
# The longest a receive waits, so that stopping the runtime never waits longer than this.
RECEIVE_WAIT_SECONDS = 1
# While a batching window is open and the batch is not full, a poller waits this long (at most until
# the window closes) before it receives again; the batch is invoked when full or when its window closes.
GATHER_PAUSE_SECONDS = 0.5
# How often a poller waiting for its turn to receive checks whether the source is stopping.
TURN_CHECK_SECONDS = 0.2

_SYSTEM_ATTRIBUTES = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
)


def sqs_record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One record of the event Lambda builds from an SQS ReceiveMessage result."""
    attributes = message.get("Attributes", {})
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {k: attributes[k] for k in _SYSTEM_ATTRIBUTES if k in attributes},
        "messageAttributes": {
            name: {
                **({"stringValue": v["StringValue"]} if "StringValue" in v else {}),
                **({"binaryValue": _b64(v["BinaryValue"])} if "BinaryValue" in v else {}),
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": v["DataType"],
            }
            for name, v in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message["MD5OfBody"],
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    record.update({"eventSource": "aws:sqs", "eventSourceARN": queue_arn, "awsRegion": region})
    return record


def _first_received(record: Mapping[str, Any]) -> float:
    return int(record["attributes"].get("ApproximateFirstReceiveTimestamp", 0)) / 1000


def _b64(value: bytes) -> str:
    import base64

    return base64.b64encode(value).decode()


def receive_messages(sqs: Any, queue_url: str, limit: int, wait_seconds: int = 0) -> list[dict[str, Any]]:
    """One ReceiveMessage as Lambda's poller makes it: every system and message attribute, at most 10."""
    response = sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=min(10, limit),
        WaitTimeSeconds=wait_seconds,
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


def settled_records(
    records: Sequence[Mapping[str, Any]], invocation_ok: bool, result: Any, report_batch_item_failures: bool
) -> list[Mapping[str, Any]]:
    """The records an invocation's outcome deletes from the queue (the rules above)."""
    if not invocation_ok:
        return []  # the batch comes back after its visibility timeout
    if not report_batch_item_failures:
        return list(records)
    kept = failed_message_ids(result, [r["messageId"] for r in records])
    return [] if kept is None else [r for r in records if r["messageId"] not in kept]


def delete_records(sqs: Any, queue_url: str, records: Sequence[Mapping[str, Any]]) -> None:
    for start in range(0, len(records), 10):
        chunk = records[start : start + 10]
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(chunk)],
        )


def failed_message_ids(response: Any, batch_ids: Sequence[str]) -> set[str] | None:
    """The messages a partial batch response keeps on the queue, or None when the whole batch failed."""
    if response is None:
        return set()
    if not isinstance(response, dict):
        return None
    failures = response.get("batchItemFailures")
    if failures is None:
        return set()
    if not isinstance(failures, list):
        return None
    kept: set[str] = set()
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if not isinstance(identifier, str) or identifier not in batch_ids:
            return None
        kept.add(identifier)
    return kept


@dataclass(frozen=True)
class BatchOutcome:
    """What one invocation of the mapping did to its batch (kept for `offload`'s and the tests' eyes)."""

    mapping: str
    function: str
    message_ids: tuple[str, ...]
    bodies: tuple[str, ...]
    receive_counts: tuple[int, ...]
    deleted: tuple[str, ...]
    invocation: Invocation
    started: float  # epoch seconds
    finished: float
    # When each message was first received (epoch seconds): a redelivery's clock starts there, not at
    # `started`, which a slow cold start can push late.
    first_received: tuple[float, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "mapping": self.mapping,
            "function": self.function,
            "messageIds": list(self.message_ids),
            "bodies": [body[:500] for body in self.bodies],
            "receiveCounts": list(self.receive_counts),
            "deleted": list(self.deleted),
            "ok": self.invocation.ok,
            "errorType": self.invocation.error_type,
            "errorMessage": self.invocation.error_message,
            "coldStart": self.invocation.cold_start,
            "timedOut": self.invocation.timed_out,
            "started": self.started,
            "finished": self.finished,
        }


Invoke = Callable[[dict[str, Any]], Invocation]


class SqsEventSource:
    """Polls one queue and invokes one function, as an event source mapping does."""

    def __init__(
        self,
        mapping: EventSourceMapping,
        function_name: str,
        sqs: Any,
        invoke: Invoke,
        region: str,
        on_batch: Callable[[BatchOutcome], None] = lambda _: None,
    ) -> None:
        self.mapping = mapping
        self._function_name = function_name
        self._sqs = sqs
        self._invoke = invoke
        self._region = region
        self._on_batch = on_batch
        self._stopping = threading.Event()
        # One receive in flight per mapping: the pollers take turns. Concurrent long polls on one
        # queue all wake for each message that arrives and split a burst into small batches; taking
        # turns, a receive takes up to the batch size of what is waiting and the next poller
        # receives right after. Invocations still run `concurrency` at once.
        self._turn = threading.Lock()
        self._enabled = threading.Event()
        self._enabled.set()
        # Pollers between their enabled check and the end of their batch; guarded by `_idle`.
        self._active = 0
        self._idle = threading.Condition()
        self._threads: list[threading.Thread] = []

    @property
    def concurrency(self) -> int:
        return self.mapping.maximum_concurrency or DEFAULT_CONCURRENCY

    def start(self) -> None:
        for index in range(self.concurrency):
            thread = threading.Thread(
                target=self._poll, args=(index,), name=f"esm-{self.mapping.logical_id}-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def disable(self) -> None:
        """Stop receiving, as `Enabled: false` does; batches in progress finish."""
        with self._idle:
            self._enabled.clear()

    def wait_idle(self, timeout: float) -> bool:
        """After `disable`: wait until no receive or batch is in flight (True), or `timeout` passes."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    def enable(self) -> None:
        self._enabled.set()

    def request_stop(self) -> None:
        """Stop polling; a batch being processed still finishes (or ends with its pool)."""
        self._stopping.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)

    def _poll(self, index: int) -> None:
        ramp_up = True
        while not self._stopping.is_set():
            with self._idle:
                enabled = self._enabled.is_set()
                if enabled:
                    self._active += 1
            if not enabled:
                ramp_up = True
                self._enabled.wait(0.2)
                continue
            try:
                if not self._poll_once(index, ramp_up):
                    return
            finally:
                with self._idle:
                    self._active -= 1
                    self._idle.notify_all()
            ramp_up = False

    def _poll_once(self, index: int, ramp_up: bool) -> bool:
        """One receive-and-process round; False when the source is stopping."""
        # Pollers join one after another (Lambda scales its pollers up gradually), so the first
        # receive after a start sees every waiting message rather than a share of them.
        if ramp_up and self._stopping.wait(index * POLLER_RAMP_SECONDS):
            return False
        try:
            batch = self._gather()
            if batch:
                self._process(batch)
        except Exception as error:
            if self._stopping.is_set():
                return False
            # Lambda's pollers back off and retry when SQS or the function is unavailable.
            print(f"[esm {self.mapping.logical_id}] {type(error).__name__}: {error}", flush=True)
            self._stopping.wait(1.0)
        return True

    def _gather(self) -> list[dict[str, Any]]:
        """Receive until the batch is full, the batching window closes, or the payload limit is near."""
        batch: list[dict[str, Any]] = []
        size = 0
        window_ends: float | None = None
        while not self._stopping.is_set() and len(batch) < self.mapping.batch_size:
            if window_ends is None:
                if not self._enabled.is_set():
                    break
                messages = self._receive(self.mapping.batch_size, RECEIVE_WAIT_SECONDS, None)
            else:
                # An open batch looks again every GATHER_PAUSE_SECONDS, without waiting in SQS, so
                # that one receive takes what arrived meanwhile and the window is never overrun.
                pause = min(GATHER_PAUSE_SECONDS, window_ends - time.monotonic())
                if pause <= 0 or self._stopping.wait(pause):
                    break
                messages = self._receive(self.mapping.batch_size - len(batch), 0, window_ends)
            if not messages:
                continue
            batch.extend(messages)
            size += sum(len(m["Body"].encode()) for m in messages)
            if window_ends is None:
                if self.mapping.batching_window_seconds <= 0:
                    break
                window_ends = time.monotonic() + self.mapping.batching_window_seconds
            if size >= MAX_PAYLOAD_BYTES:
                break
        return batch

    def _receive(self, limit: int, wait: int, window_ends: float | None) -> list[dict[str, Any]]:
        """One receive in this poller's turn; none if the source stops (or is disabled before a batch
        opens, or the batch's window closes) while it waits for its turn."""
        while not self._turn.acquire(timeout=TURN_CHECK_SECONDS):
            if self._stopping.is_set() or (window_ends is not None and time.monotonic() >= window_ends):
                return []
        try:
            if window_ends is None and not self._enabled.is_set():
                return []
            return receive_messages(self._sqs, self.mapping.queue_url, limit, wait)
        finally:
            self._turn.release()

    def _process(self, batch: list[dict[str, Any]]) -> None:
        started = time.time()
        records = [sqs_record(m, self.mapping.queue_arn, self._region) for m in batch]
        ids = [r["messageId"] for r in records]
        invocation = self._invoke({"Records": records})
        delete = settled_records(
            records, invocation.ok, invocation.result, self.mapping.report_batch_item_failures
        )
        delete_records(self._sqs, self.mapping.queue_url, delete)
        self._on_batch(
            BatchOutcome(
                mapping=self.mapping.logical_id,
                function=self._function_name,
                message_ids=tuple(ids),
                bodies=tuple(r["body"] for r in records),
                receive_counts=tuple(int(r["attributes"].get("ApproximateReceiveCount", 0)) for r in records),
                deleted=tuple(r["messageId"] for r in delete),
                invocation=invocation,
                started=started,
                finished=time.time(),
                first_received=tuple(_first_received(r) for r in records),
            )
        )
