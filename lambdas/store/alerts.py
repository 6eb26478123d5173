"""SNS access: the alert message an operator receives."""

import json
from typing import Any

from lambdas.store import clients

_SUBJECT_LIMIT = 100


class Alerts:
    def __init__(self, topic_arn: str) -> None:
        self._topic = topic_arn

    def publish(self, subject: str, details: dict[str, Any]) -> None:
        clients.client("sns").publish(
            TopicArn=self._topic,
            Subject=subject[:_SUBJECT_LIMIT],
            Message=json.dumps(details, indent=2, default=str),
        )
