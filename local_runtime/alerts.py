"""SNS alerts made visible: a local queue subscribed to each topic, printed and collected."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from local_runtime.console import Console

ALERTS_QUEUE = "offload-local-alerts"


class AlertCollector:
    def __init__(self, sqs: Any, sns: Any, topic_arns: list[str], console: Console) -> None:
        self._sqs = sqs
        self._sns = sns
        self._topics = topic_arns
        self._console = console
        self._alerts: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="alerts", daemon=True)
        self._queue_url = ""

    def start(self) -> None:
        self._queue_url = self._sqs.create_queue(QueueName=ALERTS_QUEUE)["QueueUrl"]
        arn = self._sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        for topic in self._topics:
            self._sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)

    def alerts(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._alerts)

    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                response = self._sqs.receive_message(
                    QueueUrl=self._queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
                )
            except Exception:
                if self._stopping.wait(1):
                    return
                continue
            for message in response.get("Messages", []):
                self._collect(json.loads(message["Body"]))
                self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])

    def _collect(self, envelope: dict[str, Any]) -> None:
        alert = {
            "subject": envelope.get("Subject"),
            "message": envelope.get("Message"),
            "topicArn": envelope.get("TopicArn"),
            "received": time.time(),
        }
        with self._lock:
            self._alerts.append(alert)
        self._console.say(f"{time.strftime('%H:%M:%S')}  ALERT  {alert['subject']}")
        for line in str(alert["message"]).splitlines():
            self._console.say(f"          | {line}")
