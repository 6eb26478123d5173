"""The deployed pipeline, in-process: moto resources from the synthesized template, handlers called directly.

`Pipeline` plays the parts AWS plays around the functions: API Gateway (an event per request),
the SQS event source mappings and the schedule. The process's environment is the functions' (the shared
worker's for the worker); a worker group's function (process_file's) runs with its own variables put
over it for the length of its invocation (`group_workers`), as its own function would. Deliveries go through the local runtime's own event
source code (`local_runtime.esm`): the same receive, the same records, the same partial batch rules,
so a test and `make run` cannot disagree about what a batch response deletes. Redrive is SQS's own
(moto's), after the template's `maxReceiveCount` receives.
"""

import base64
import contextlib
import copy
import json
import os
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from lambdas import config
from lambdas.handlers import api, dead_letter, recovery, worker
from lambdas.store import clients
from local_runtime.context import LambdaContext
from local_runtime.esm import delete_records, receive_messages, settled_records, sqs_record
from local_runtime.template import EventSourceMapping

EVENTS = Path(__file__).resolve().parent.parent / "events"


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Delivery:
    response: Any  # what the handler returned
    kept: list[dict[str, Any]]  # the records not deleted: they come back after their visibility timeout


@dataclass
class Pipeline:
    env: dict[str, str]
    queue_url: str
    dlq_url: str
    table: str
    topic_arn: str
    alert_queue_url: str
    mappings: list[EventSourceMapping]  # the template's, as provisioned
    # A worker group's queue URL -> the variables its function has that differ from the shared worker's.
    group_workers: dict[str, dict[str, str]] = field(default_factory=dict)
    group_dlq_urls: list[str] = field(default_factory=list)
    sqs: Any = field(init=False)

    def __post_init__(self) -> None:
        self.sqs = boto3.client("sqs")

    # --- API Gateway ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw_body: str | None = None,
        base64_body: bool = False,
        api_key_id: str | None = None,
        identity: dict[str, Any] | None = None,
    ) -> ApiResponse:
        """One request as API Gateway passes it on; `api_key_id` names the caller's key (by default the
        client key of tests/events/api_post_job.json), `identity` sets other fields of
        requestContext.identity (a signed request's userArn)."""
        event = copy.deepcopy(load_event("api_post_job.json"))
        path, _, query = path.partition("?")
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        event["queryStringParameters"] = dict(pairs) or None
        event["multiValueQueryStringParameters"] = {
            name: [v for n, v in pairs if n == name] for name, _ in pairs
        } or None
        event["httpMethod"] = method
        event["path"] = path
        event["resource"], event["pathParameters"] = _resource(path)
        if api_key_id is not None:
            event["requestContext"]["identity"]["apiKeyId"] = api_key_id
        event["requestContext"]["identity"].update(identity or {})
        event["requestContext"]["httpMethod"] = method
        event["requestContext"]["resourcePath"] = event["resource"]
        event["requestContext"]["requestId"] = str(uuid.uuid4())
        text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
        if base64_body and text is not None:
            text = base64.b64encode(text.encode()).decode()
        event["body"] = text
        event["isBase64Encoded"] = base64_body
        all_headers = {**event["headers"], **(headers or {})}
        event["headers"] = all_headers
        event["multiValueHeaders"] = {k: [v] for k, v in all_headers.items()}
        response = api.handler(event, LambdaContext(function_name="api"))
        payload = json.loads(response["body"]) if response.get("body") else None
        headers = {k: v[-1] for k, v in (response.get("multiValueHeaders") or {}).items()}
        headers.update(response.get("headers") or {})
        return ApiResponse(response["statusCode"], payload, headers)

    def submit(
        self, job_type: str, payload: dict[str, Any], *, api_key_id: str | None = None, **extra: Any
    ) -> str:
        body = {"type": job_type, "payload": payload, **extra}
        response = self.request("POST", "/jobs", body, api_key_id=api_key_id)
        assert response.status == 202, response.body
        return str(response.body["jobId"])

    def job(self, job_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/jobs/{job_id}")
        assert response.status == 200, response.body
        return dict(response.body)

    # --- SQS event source mappings ---------------------------------------------------------------

    def _mapping(self, queue_url: str) -> EventSourceMapping:
        (mapping,) = [m for m in self.mappings if m.queue_url == queue_url]
        return mapping

    def receive(self, queue_url: str, limit: int = 10) -> list[dict[str, Any]]:
        """Receive up to `limit` messages as the records of the SQS event Lambda would build."""
        mapping = self._mapping(queue_url)
        region = self.sqs.meta.region_name
        messages = receive_messages(self.sqs, queue_url, limit)
        return [sqs_record(message, mapping.queue_arn, region) for message in messages]

    def deliver(
        self,
        queue_url: str,
        records: list[dict[str, Any]],
        handler: Callable[[dict[str, Any], Any], Any],
        name: str = "function",
    ) -> Delivery:
        """Invoke like the event source mapping does, then delete what its rules delete.

        A handler that raises fails the whole batch (nothing is deleted) and the error reaches the test.
        """
        with self._as_function_of(queue_url):
            response = handler({"Records": records}, LambdaContext(function_name=name))
        report = self._mapping(queue_url).report_batch_item_failures
        deleted = settled_records(records, True, response, report)
        delete_records(self.sqs, queue_url, deleted)
        return Delivery(response, [r for r in records if r not in deleted])

    @contextlib.contextmanager
    def _as_function_of(self, queue_url: str) -> Iterator[None]:
        """The worker of a group's queue (or high queue) runs with its own environment (and settings
        loaded from it)."""
        queue_url = {high: queue for queue, high in self.high_queue_urls.items()}.get(queue_url, queue_url)
        own = self.group_workers.get(queue_url)
        if own is None:
            yield
            return
        from lambdas.models import settings

        saved = {name: os.environ.get(name) for name in own}
        os.environ.update(own)
        settings.reset()
        worker._worker.cache_clear()
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            settings.reset()
            worker._worker.cache_clear()

    def queue_url_of(self, job_type: str) -> str:
        """The queue a job of `job_type` is sent to: its worker group's, or the shared one."""
        routes: dict[str, str] = json.loads(self.env.get(config.ENV_JOB_QUEUE_URLS, "{}"))
        return routes.get(job_type, self.queue_url)

    @property
    def high_queue_urls(self) -> dict[str, str]:
        """Each job queue's high queue, as the functions know them (HIGH_QUEUE_URLS)."""
        return dict(json.loads(self.env.get(config.ENV_HIGH_QUEUE_URLS, "{}")))

    @property
    def worker_queue_urls(self) -> list[str]:
        """The queues the workers drain, each group's high queue before its queue."""
        queues = [self.queue_url, *self.group_workers]
        return [*(self.high_queue_urls[q] for q in queues if q in self.high_queue_urls), *queues]

    def run_worker(self, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """One batch of the shared queue, or, when it is empty, of the first group queue with messages;
        `records` are delivered to the queue they came from."""
        if records is None:
            for queue_url in self.worker_queue_urls:
                records = self.receive(queue_url)
                if records:
                    return dict(self.deliver(queue_url, records, worker.handler, "worker").response)
            return dict(self.deliver(self.queue_url, [], worker.handler, "worker").response)
        return dict(self.deliver(self._queue_of(records), records, worker.handler, "worker").response)

    def _queue_of(self, records: list[dict[str, Any]]) -> str:
        urls = {m.queue_arn: m.queue_url for m in self.mappings}
        return urls[records[0]["eventSourceARN"]] if records else self.queue_url

    def run_dead_letter(self, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        records = self.receive(self.dlq_url, 5) if records is None else records
        return dict(self.deliver(self.dlq_url, records, dead_letter.handler, "dead_letter").response)

    def run_recovery(self) -> dict[str, Any]:
        # The stack's timeout: a sweep of a few hundred jobs on a loaded machine outlives the default.
        context = LambdaContext(function_name="recovery", timeout_seconds=config.RECOVERY_TIMEOUT_SECONDS)
        return dict(recovery.handler(load_event("schedule.json"), context))

    def make_visible(self, records: list[dict[str, Any]]) -> None:
        """Time passes: the messages' visibility timeouts (the backoff) run out now."""
        urls = {m.queue_arn: m.queue_url for m in self.mappings}
        for record in records:
            self.sqs.change_message_visibility(
                QueueUrl=urls[record["eventSourceARN"]],
                ReceiptHandle=record["receiptHandle"],
                VisibilityTimeout=0,
            )

    def drain(self, rounds: int = 30, letters_return: bool = False) -> None:
        """Run the worker and the dead-letter consumer until both queues are empty.

        Retried messages are made visible at once: the test stands in for the backoff's passing. With
        `letters_return`, so are the letters the consumer keeps (a fan-out still running)."""
        for _ in range(rounds):
            busy = False
            for queue_url in self.worker_queue_urls:
                records = self.receive(queue_url)
                if records:
                    busy = True
                    self.make_visible(self.deliver(queue_url, records, worker.handler, "worker").kept)
            for dlq_url in (self.dlq_url, *self.group_dlq_urls):
                letters = self.receive(dlq_url, 5)
                if letters:
                    busy = True
                    kept = self.deliver(dlq_url, letters, dead_letter.handler, "dead_letter").kept
                    if letters_return:
                        self.make_visible(kept)
            if not busy:
                return
        raise AssertionError("queues did not drain")

    def fail_until_redriven(self) -> int:
        """Let every invocation of the worker fail before its handler runs (a crash, a timeout: nothing is
        deleted), the visibility timeout passing at once, until SQS moves the queue's messages (one batch
        of up to ten) to the dead-letter queue. Returns the receives that took: the `maxReceiveCount`."""
        policy = json.loads(
            self.sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["RedrivePolicy"])[
                "Attributes"
            ]["RedrivePolicy"]
        )
        for receives in range(int(policy["maxReceiveCount"]) + 1):
            records = self.receive(self.queue_url)
            if not records:
                return receives
            self.make_visible(records)
        raise AssertionError(f"the queue did not redrive after {receives} receives")

    def visible(self, queue_url: str) -> int:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    # --- SNS ------------------------------------------------------------------------------------

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts published so far (the topic fans out to a test queue), as parsed messages."""
        found = []
        for record in iter_all(self.sqs, self.alert_queue_url):
            envelope = json.loads(record["Body"])
            found.append({"subject": envelope.get("Subject"), **json.loads(envelope["Message"])})
        return found


def _resource(path: str) -> tuple[str, dict[str, str] | None]:
    """The API Gateway resource a path matches, and its path parameters (literal parts win, as there)."""
    parts = path.strip("/").split("/")
    if len(parts) >= 2 and parts[0] == "jobs" and path.rstrip("/") not in ("/jobs/retry", "/jobs/cancel"):
        return "/".join(["", "jobs", "{jobId}", *parts[2:]]), {"jobId": parts[1]}
    return path, None


def iter_all(sqs: Any, queue_url: str) -> Iterator[dict[str, Any]]:
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return
        for message in messages:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            yield message


def fail_sends() -> None:
    """Make SQS SendMessage fail on the wire, as an outage between the put and the send would."""

    def refuse(**_: object) -> None:
        raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "injected"}}, "SendMessage")

    # The cached client keeps the hook until the autouse fixture resets the clients after the test.
    clients.client("sqs").meta.events.register("before-call.sqs.SendMessage", refuse)
