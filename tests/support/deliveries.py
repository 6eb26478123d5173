"""Every delivery attempt of a fan-out, read through the delivery log's own pages (as the API reads them)."""

from lambdas.models.deliveries import DeliveryAttempt
from lambdas.store.deliveries import DeliveryLog


def every_attempt(log: DeliveryLog, fanout_id: str) -> list[DeliveryAttempt]:
    """Grouped by delivery and in attempt order, every page of them."""
    attempts: list[DeliveryAttempt] = []
    after: str | None = None
    while True:
        page, after = log.page(fanout_id, None, 100, after)
        attempts.extend(page)
        if after is None:
            return attempts
