"""The deployed pipeline, in-process: moto resources from the synthesized template, handlers called directly.

`Pipeline` plays the parts AWS plays around the four functions: API Gateway (an event per request),
the SQS event source mappings (receive a batch, invoke, delete what succeeded) and the schedule.
"""

import base64
import copy
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from lambdas.handlers import api, dead_letter, recovery, worker
from lambdas.store import clients
from local_runtime.context import LambdaContext

EVENTS = Path(__file__).resolve().parent.parent / "events"


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / name).read_text())


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Pipeline:
    env: dict[str, str]
    queue_url: str
    dlq_url: str
    table: str
    topic_arn: str
    alert_queue_url: str
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
    ) -> ApiResponse:
        event = copy.deepcopy(load_event("api_post_job.json"))
        event["httpMethod"] = method
        event["path"] = path
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "jobs":
            event["resource"], event["pathParameters"] = "/jobs/{jobId}", {"jobId": parts[1]}
        else:
            event["resource"], event["pathParameters"] = path, None
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

    def submit(self, job_type: str, payload: dict[str, Any], **extra: Any) -> str:
        response = self.request("POST", "/jobs", {"type": job_type, "payload": payload, **extra})
        assert response.status == 202, response.body
        return str(response.body["jobId"])

    def job(self, job_id: str) -> dict[str, Any]:
        response = self.request("GET", f"/jobs/{job_id}")
        assert response.status == 200, response.body
        return dict(response.body)

    # --- SQS event source mappings ---------------------------------------------------------------

    def receive(self, queue_url: str, limit: int = 10) -> list[dict[str, Any]]:
        """Receive up to `limit` messages as the records of an SQS Lambda event."""
        response = self.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=limit,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        records = []
        for message in response.get("Messages", []):
            attributes = {
                name: {"stringValue": value["StringValue"], "dataType": value["DataType"]}
                for name, value in (message.get("MessageAttributes") or {}).items()
            }
            records.append(
                {
                    "messageId": message["MessageId"],
                    "receiptHandle": message["ReceiptHandle"],
                    "body": message["Body"],
                    "attributes": message.get("Attributes", {}),
                    "messageAttributes": attributes,
                    "md5OfBody": message["MD5OfBody"],
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:queue",
                    "awsRegion": "us-east-1",
                }
            )
        return records

    def _deliver(
        self, queue_url: str, records: list[dict[str, Any]], handler: Any, name: str
    ) -> dict[str, Any]:
        """Invoke like the event source mapping does, then delete every message not reported failed."""
        response = handler({"Records": records}, LambdaContext(function_name=name))
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for record in records:
            if record["messageId"] not in failed:
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=record["receiptHandle"])
        return dict(response)

    def run_worker(self, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        records = self.receive(self.queue_url) if records is None else records
        return self._deliver(self.queue_url, records, worker.handler, "worker")

    def run_dead_letter(self, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        records = self.receive(self.dlq_url, 5) if records is None else records
        return self._deliver(self.dlq_url, records, dead_letter.handler, "dead_letter")

    def run_recovery(self) -> dict[str, Any]:
        return dict(recovery.handler(load_event("schedule.json"), LambdaContext(function_name="recovery")))

    def make_visible(self, records: list[dict[str, Any]]) -> None:
        """Time passes: the messages' visibility timeouts (the backoff) run out now."""
        for record in records:
            self.sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=record["receiptHandle"], VisibilityTimeout=0
            )

    def drain(self, rounds: int = 30) -> None:
        """Run the worker and the dead-letter consumer until both queues are empty.

        Retried messages are made visible at once: the test stands in for the backoff's passing.
        """
        for _ in range(rounds):
            records = self.receive(self.queue_url)
            if records:
                failed = {f["itemIdentifier"] for f in self.run_worker(records)["batchItemFailures"]}
                self.make_visible([r for r in records if r["messageId"] in failed])
            letters = self.receive(self.dlq_url, 5)
            if letters:
                self.run_dead_letter(letters)
            if not records and not letters:
                return
        raise AssertionError("queues did not drain")

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
