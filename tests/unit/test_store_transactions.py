"""The store's transactions against DynamoDB's cancellations, with botocore's Stubber (no network)."""

from typing import Any

import pytest
from botocore.stub import Stubber

from lambdas.store import clients, transactions
from lambdas.store.errors import TransactionCancelledError
from lambdas.store.expressions import Update

KEY = {"jobId": {"S": "parent"}}
SEEN = {"jobId": {"S": "parent"}, "status": {"S": "waiting"}}


def _operations() -> list[transactions.Operation]:
    change = Update(assign={}, add={"childrenDone": 1}, condition="attribute_exists(jobId)")
    return [
        transactions.update("job", "jobs", {"jobId": {"S": "child"}}, change),
        transactions.update("parent", "jobs", KEY, change, seen=True),
    ]


def _cancelled(stub: Stubber, *reasons: dict[str, Any]) -> None:
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        http_status_code=400,
        modeled_fields={"CancellationReasons": list(reasons)},
    )


def test_a_transaction_cancelled_by_a_conflict_is_sent_again() -> None:
    """Broken line: `write`'s `if cancelled.failed or round_ == MAX_ROUNDS - 1:` as `if True:` (a
    conflict with another child's transaction on the same parent would end the attempt)."""
    ddb = clients.client("dynamodb")
    pauses: list[float] = []
    with Stubber(ddb) as stub:
        for _ in range(2):
            _cancelled(stub, {"Code": "None"}, {"Code": "TransactionConflict"})
        stub.add_response("transact_write_items", {})

        transactions.write(ddb, _operations(), sleep=pauses.append, rng=lambda: 1.0)

        stub.assert_no_pending_responses()
    assert pauses == [transactions.FIRST_BACKOFF_SECONDS, transactions.FIRST_BACKOFF_SECONDS * 2]


def test_a_failed_condition_is_not_retried_and_names_the_item_with_what_it_held() -> None:
    ddb = clients.client("dynamodb")
    with Stubber(ddb) as stub:
        _cancelled(stub, {"Code": "None"}, {"Code": "ConditionalCheckFailed", "Item": SEEN})

        with pytest.raises(TransactionCancelledError) as cancelled:
            transactions.write(ddb, _operations(), sleep=lambda _: None)

        stub.assert_no_pending_responses()
    assert cancelled.value.failed == {"parent"}
    assert cancelled.value.seen == {"parent": SEEN}


def test_conflicts_that_do_not_clear_end_in_the_cancellation() -> None:
    ddb = clients.client("dynamodb")
    with Stubber(ddb) as stub:
        for _ in range(transactions.MAX_ROUNDS):
            _cancelled(stub, {"Code": "TransactionConflict"}, {"Code": "None"})

        with pytest.raises(TransactionCancelledError) as cancelled:
            transactions.write(ddb, _operations(), sleep=lambda _: None)

        stub.assert_no_pending_responses()
    assert cancelled.value.failed == frozenset()


def test_puts_ride_in_the_same_transaction_after_the_updates() -> None:
    ddb = clients.client("dynamodb")
    put = transactions.Put("deliveries", {"fanoutId": {"S": "parent"}, "attemptKey": {"S": "d#0001"}})
    with Stubber(ddb) as stub:
        stub.add_response(
            "transact_write_items",
            {},
            {
                "TransactItems": [entry for _, entry in _operations()]
                + [{"Put": {"TableName": "deliveries", "Item": put.item}}]
            },
        )

        transactions.write(ddb, _operations(), [put])

        stub.assert_no_pending_responses()
