"""The UpdateItem and Query builders and the one time format: pure functions, no AWS."""

import pytest

from lambdas.models.timestamps import iso_time
from lambdas.store import codec, schema
from lambdas.store.expressions import Query, Update


def test_an_update_names_every_attribute_through_placeholders() -> None:
    update = Update(
        assign={"status": "done", "result": "{}"},
        add={"attempts": 1},
        remove=["alertClaimedUntil"],
        condition="#status = :processing AND attempts = :attempt",
        values={":processing": "processing", ":attempt": 2},
    )

    params = update.params()

    assert params["UpdateExpression"] == "SET #s0 = :s0, #s1 = :s1 ADD #a0 :a0 REMOVE #r0"
    assert params["ConditionExpression"] == "#status = :processing AND attempts = :attempt"
    assert params["ExpressionAttributeNames"] == {
        "#status": "status",
        "#s0": "status",
        "#s1": "result",
        "#a0": "attempts",
        "#r0": "alertClaimedUntil",
    }
    assert params["ExpressionAttributeValues"] == {
        ":processing": {"S": "processing"},
        ":attempt": {"N": "2"},
        ":s0": {"S": "done"},
        ":s1": {"S": "{}"},
        ":a0": {"N": "1"},
    }


def test_an_update_without_values_sends_no_value_map() -> None:
    params = Update(assign={}, remove=["a"], condition="attribute_exists(jobId)").params()

    assert params["UpdateExpression"] == "REMOVE #r0"
    assert "ExpressionAttributeValues" not in params


def test_an_update_applied_to_an_item_gives_the_item_dynamodb_would_hold() -> None:
    update = Update(assign={"status": "processing"}, add={"attempts": 1}, remove=["gone"], condition="")

    after = update.applied_to({"status": "pending", "attempts": 1, "gone": "x", "kept": "y"})

    assert after == {"status": "processing", "attempts": 2, "kept": "y"}


def test_times_are_iso_8601_utc_with_milliseconds_and_z() -> None:
    assert iso_time(0) == "1970-01-01T00:00:00.000Z"
    assert iso_time(1_796_000_000.5) == "2026-11-30T00:53:20.500Z"


def test_a_query_names_its_keys_filters_and_projection_through_placeholders() -> None:
    """Seen to fail against `Query.params` with its filters joined by "OR" and with `newest_first`
    sending ScanIndexForward=True (a newest-first list read oldest first)."""
    query = Query(
        "jobs",
        ("statusShard", "pending#3"),
        sort=("statusAt", "<", 1700),
        index="byStatusTime",
        filters={"jobType": "echo", "owner": "k1"},
        limit=8,
        newest_first=True,
        projection=("dueAt",),
        start={"jobId": "j1", "statusShard": "pending#3", "statusAt": 1800},
    )

    params = query.params()

    assert params == {
        "TableName": "jobs",
        "IndexName": "byStatusTime",
        "KeyConditionExpression": "#k = :k AND #s < :s",
        "FilterExpression": "#f0 = :f0 AND #f1 = :f1",
        "ProjectionExpression": "#p0",
        "ScanIndexForward": False,
        "Limit": 8,
        "ExclusiveStartKey": {
            "jobId": {"S": "j1"},
            "statusShard": {"S": "pending#3"},
            "statusAt": {"N": "1800"},
        },
        "ExpressionAttributeNames": {
            "#k": "statusShard",
            "#s": "statusAt",
            "#f0": "jobType",
            "#f1": "owner",
            "#p0": "dueAt",
        },
        "ExpressionAttributeValues": {
            ":k": {"S": "pending#3"},
            ":s": {"N": "1700"},
            ":f0": {"S": "echo"},
            ":f1": {"S": "k1"},
        },
    }


def test_a_plain_query_sends_only_its_key_condition() -> None:
    """Seen to fail against `Query.params` sending `Limit: None` and `ScanIndexForward: True` by default."""
    assert Query("limits", ("limit", "send"), consistent=True).params() == {
        "TableName": "limits",
        "KeyConditionExpression": "#k = :k",
        "ConsistentRead": True,
        "ExpressionAttributeNames": {"#k": "limit"},
        "ExpressionAttributeValues": {":k": {"S": "send"}},
    }


def test_a_query_counts_or_matches_a_sort_key_prefix() -> None:
    """Seen to fail against `Query.params` writing `begins_with` as an infix operator (`#s begins_with :s`)."""
    counted = Query("jobs", ("ownerShard", "k1#0"), count=True).params()
    prefixed = Query("log", ("fanoutId", "f1"), sort=("attemptKey", "begins_with", "d1#")).params()

    assert counted["Select"] == "COUNT"
    assert "ProjectionExpression" not in counted
    assert prefixed["KeyConditionExpression"] == "#k = :k AND begins_with(#s, :s)"
    assert prefixed["ExpressionAttributeValues"][":s"] == {"S": "d1#"}


def test_a_query_refuses_a_comparison_dynamodb_has_no_key_condition_for() -> None:
    """Seen to fail against `Query.params` without its operator check (`<>` sent to DynamoDB)."""
    with pytest.raises(ValueError, match="no key condition"):
        Query("jobs", ("ownerShard", "k1#0"), sort=("createdAt", "<>", "x")).params()


def test_a_numeric_sort_key_value_keeps_its_digits_and_a_text_one_stays_text() -> None:
    """Seen to fail against `codec.sort_value` as `int(value)` (a cursor's "1.5" refused) and as `str`
    for a numeric index (sent as S where the index holds N)."""
    assert Query("t", ("k", "v"), sort=("n", ">=", codec.sort_value(schema.STATUS_INDEX, "1.5"))).params()[
        "ExpressionAttributeValues"
    ][":s"] == {"N": "1.5"}
    assert codec.sort_value(schema.CREATED_INDEX, 5) == "5"
