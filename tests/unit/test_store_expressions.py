"""The UpdateItem builder and the one time format: pure functions, no AWS."""

from lambdas.models.timestamps import iso_time
from lambdas.store.expressions import Update


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
