"""The webhook delivery log: one DynamoDB item per delivery attempt.

Items live under their fan-out (`fanoutId`), sorted by `<deliveryId>#<attempt>`: the API reads a
fan-out's log, or one delivery's, and nothing reads across fan-outs. Re-recording the same attempt (a worker
that crashed after writing it) overwrites the item instead of adding a second one. The worker commits
an attempt's line with the attempt's outcome (`entry`, one transaction); `record` writes it alone. Items expire
(`expiresAt`, DynamoDB TTL) after the same retention as finished jobs.
"""

import time
from collections.abc import Callable
from typing import Any

from lambdas import config
from lambdas.models.deliveries import DeliveryAttempt, DeliveryOutcome
from lambdas.store import schema
from lambdas.store.clients import client
from lambdas.store.codec import attempt_key, attempts_prefix
from lambdas.store.expressions import Query, marshal, unmarshal
from lambdas.store.transactions import Put

RESPONSE_EXCERPT_BYTES = 1024


class DeliveryLog:
    def __init__(
        self,
        table_name: str,
        ttl_days: int = config.FINISHED_TTL_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._table = table_name
        self._ttl_seconds = ttl_days * 86_400
        self._clock = clock

    def record(self, attempt: DeliveryAttempt) -> None:
        """Write the attempt's line now, on its own."""
        self.entry(attempt).write_alone()

    def entry(self, attempt: DeliveryAttempt) -> Put:
        """The attempt's line as a put, to commit with the attempt's outcome."""
        item: dict[str, Any] = {
            schema.DELIVERIES_PK: attempt.fanout_id,
            schema.DELIVERIES_SK: attempt_key(attempt.delivery_id, attempt.attempt),
            "deliveryId": attempt.delivery_id,
            "endpointId": attempt.endpoint_id,
            "attemptedAt": attempt.attempted_at,
            "eventType": attempt.event_type,
            "attempt": attempt.attempt,
            "outcome": attempt.outcome.value,
            "latencyMs": attempt.latency_ms,
            schema.TTL_ATTRIBUTE: int(self._clock()) + self._ttl_seconds,
        }
        if attempt.http_status is not None:
            item["httpStatus"] = attempt.http_status
        if attempt.error:
            item["error"] = attempt.error[:1000]
        if attempt.response:
            item["response"] = _excerpt(attempt.response)
        return Put(self._table, marshal(item))

    def page(
        self, fanout_id: str, delivery_id: str | None, limit: int, after: str | None
    ) -> tuple[list[DeliveryAttempt], str | None]:
        """Up to `limit` attempts of a fan-out (or of one of its deliveries), in delivery and attempt
        order, after the attempt key `after`; and the key to continue after (None at the end)."""
        query = Query(
            self._table,
            (schema.DELIVERIES_PK, fanout_id),
            sort=None
            if delivery_id is None
            else (schema.DELIVERIES_SK, "begins_with", attempts_prefix(delivery_id)),
            limit=limit,
            start=None if after is None else {schema.DELIVERIES_PK: fanout_id, schema.DELIVERIES_SK: after},
        )
        response = client("dynamodb").query(**query.params())
        items = [unmarshal(raw) for raw in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        following = str(items[-1][schema.DELIVERIES_SK]) if items and last else None
        return [_from_item(item) for item in items], following


def _excerpt(text: str) -> str:
    encoded = text.encode("utf-8")[:RESPONSE_EXCERPT_BYTES]
    return encoded.decode("utf-8", errors="ignore")


def _from_item(item: dict[str, Any]) -> DeliveryAttempt:
    status = item.get("httpStatus")
    return DeliveryAttempt(
        fanout_id=item[schema.DELIVERIES_PK],
        delivery_id=item["deliveryId"],
        endpoint_id=item["endpointId"],
        event_type=item["eventType"],
        attempt=int(item["attempt"]),
        attempted_at=item["attemptedAt"],
        outcome=DeliveryOutcome(item["outcome"]),
        latency_ms=int(item["latencyMs"]),
        http_status=None if status is None else int(status),
        error=item.get("error"),
        response=item.get("response"),
    )
