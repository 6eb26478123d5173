"""The fair-queue rules of `local_runtime.fair_queues`, one by one, on moto's SQS in-process."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_runtime.fair_queues import NOISY_MIN_IN_FLIGHT, serve_fairly


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    serve_fairly(monkeypatch.setattr)
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def _queue(sqs: Any, name: str = "q", **attributes: str) -> str:
    url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    return url


def _send(sqs: Any, url: str, group: str | None, count: int) -> None:
    for i in range(count):
        extra = {"MessageGroupId": group} if group is not None else {}
        sqs.send_message(QueueUrl=url, MessageBody=f"{group}-{i}", **extra)


def _receive(sqs: Any, url: str, count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while len(messages) < count:
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(10, count - len(messages)),
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            break
        messages.extend(got)
    return messages


def test_a_noisy_tenants_backlog_does_not_delay_a_quiet_tenants_new_messages(sqs: Any) -> None:
    """Seen to fail with `serve_fairly` not applied (moto's plain order: alpha's backlog first)."""
    url = _queue(sqs)
    _send(sqs, url, "alpha", 100)
    _receive(sqs, url, NOISY_MIN_IN_FLIGHT)  # alpha holds 30 in flight: all of them, so it is noisy
    _send(sqs, url, "beta", 3)
    served = [m["Body"] for m in _receive(sqs, url, 5)]
    assert served[:3] == ["beta-0", "beta-1", "beta-2"]
    assert served[3:] == ["alpha-30", "alpha-31"]  # then the backlog, in its own order


def test_below_the_noise_threshold_the_queue_keeps_its_order(sqs: Any) -> None:
    """Seen to fail with `count >= NOISY_MIN_IN_FLIGHT` dropped from the noisy rule."""
    url = _queue(sqs)
    _send(sqs, url, "alpha", 40)
    _receive(sqs, url, NOISY_MIN_IN_FLIGHT - 1)
    _send(sqs, url, "beta", 1)
    assert _receive(sqs, url, 1)[0]["Body"] == f"alpha-{NOISY_MIN_IN_FLIGHT - 1}"


def test_with_no_quiet_message_waiting_a_noisy_tenant_is_served_as_usual(sqs: Any) -> None:
    url = _queue(sqs)
    _send(sqs, url, "alpha", 50)
    _receive(sqs, url, NOISY_MIN_IN_FLIGHT)
    assert [m["Body"] for m in _receive(sqs, url, 3)] == ["alpha-30", "alpha-31", "alpha-32"]


def test_the_order_raises_no_receive_count_of_a_message_not_returned(sqs: Any) -> None:
    """Fairness only reorders: alpha's waiting messages are first received (count 1) when returned."""
    url = _queue(sqs)
    _send(sqs, url, "alpha", 60)
    _receive(sqs, url, NOISY_MIN_IN_FLIGHT)
    _send(sqs, url, "beta", 5)
    _receive(sqs, url, 5)
    rest = _receive(sqs, url, 30)
    assert {m["Attributes"]["ApproximateReceiveCount"] for m in rest} == {"1"}


def test_messages_without_a_group_are_each_their_own_quiet_tenant(sqs: Any) -> None:
    url = _queue(sqs)
    _send(sqs, url, "alpha", 40)
    _receive(sqs, url, NOISY_MIN_IN_FLIGHT)
    _send(sqs, url, None, 2)
    assert [m["Body"] for m in _receive(sqs, url, 2)] == ["None-0", "None-1"]


def test_of_two_noisy_tenants_the_one_with_fewer_in_flight_comes_first(sqs: Any) -> None:
    url = _queue(sqs)
    _send(sqs, url, "alpha", 40)
    _receive(sqs, url, 40)  # alpha: 40 in flight
    _send(sqs, url, "beta", 40)
    _receive(sqs, url, 32)  # beta: 32 in flight; both noisy
    _send(sqs, url, "alpha", 2)
    served = [m["Body"] for m in _receive(sqs, url, 3)]
    assert served == ["beta-32", "beta-33", "beta-34"]
