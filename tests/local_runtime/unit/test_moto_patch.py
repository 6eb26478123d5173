"""The DynamoDB write serialisation cannot be dropped silently by a moto upgrade; backends are looked up once."""

import time

import pytest
from moto.dynamodb.models import DynamoDBBackend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from moto.sqs.models import Message, SQSBackend

from local_runtime.moto_main import (
    ITEM_OPERATIONS,
    MotoPatchError,
    read_retention_directly,
    remember_backends,
    serialise_item_operations,
)
from local_runtime.moto_server import MotoServer


def test_every_item_operation_is_wrapped_in_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    originals = {name: getattr(DynamoDBBackend, name) for name in ITEM_OPERATIONS}

    serialise_item_operations(monkeypatch.setattr)

    for name, original in originals.items():
        wrapped = getattr(DynamoDBBackend, name)
        assert wrapped is not original
        assert wrapped.__wrapped__ is original


@pytest.mark.parametrize("name", ["update_item", "transact_write_items"])
def test_a_missing_method_stops_the_patch_and_names_it(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # given a moto whose backend renamed one of the operations
    monkeypatch.delattr(DynamoDBBackend, name)

    with pytest.raises(MotoPatchError, match=rf"DynamoDBBackend\.{name}"):
        serialise_item_operations(monkeypatch.setattr)


def test_the_server_refuses_to_start_without_the_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(DynamoDBBackend, "put_item")
    server = MotoServer()

    with pytest.raises(MotoPatchError, match="put_item"):
        server.start()
    assert server._process is None


def test_a_hosts_backend_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # given moto's dispatcher, whose lookup lists its package directory on every call
    lookups: list[str | None] = []

    def lookup(_self: DomainDispatcherApplication, host: str | None) -> str | None:
        lookups.append(host)
        return None if host is None else host.split(".")[0]

    monkeypatch.setattr(DomainDispatcherApplication, "get_backend_for_host", lookup)
    remember_backends(monkeypatch.setattr)
    app = DomainDispatcherApplication(lambda service: None)  # type: ignore[arg-type,return-value]

    # when requests for two hosts arrive, three times each
    answers = [app.get_backend_for_host(host) for host in ("sqs.x", "dynamodb.x") * 3]

    # then each host was looked up once, and every answer is the lookup's own
    assert answers == ["sqs", "dynamodb"] * 3
    assert lookups == ["sqs.x", "dynamodb.x"]


def test_remembered_backends_answer_as_moto_does(monkeypatch: pytest.MonkeyPatch) -> None:
    app = DomainDispatcherApplication(lambda service: None)  # type: ignore[arg-type,return-value]
    hosts = [None, "moto_api", "sqs", "dynamodb.us-east-1.amazonaws.com", "sqs.us-east-1.amazonaws.com"]
    expected = [app.get_backend_for_host(host) for host in hosts]

    remember_backends(monkeypatch.setattr)

    assert [app.get_backend_for_host(host) for host in hosts * 2] == expected * 2


def test_retention_is_read_without_counting_the_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a queue with a 60 s retention period, one message sent now and one sent 61 s ago
    backend = SQSBackend("us-east-1", "123456789012")
    queue = backend.create_queue("q", MessageRetentionPeriod="60")
    fresh = Message("fresh", "body")
    stale = Message("stale", "body")
    fresh.sent_timestamp = int(time.time() * 1000)
    stale.sent_timestamp = int((time.time() - 61) * 1000)
    original = [backend.is_message_valid_based_on_retention_period("q", m) for m in (fresh, stale)]
    counted: list[str] = []
    monkeypatch.setattr(
        type(queue), "approximate_number_of_messages", property(lambda q: counted.append("n"))
    )

    read_retention_directly(monkeypatch.setattr)

    # then the answers are moto's own, and no message count was taken for them
    assert [backend.is_message_valid_based_on_retention_period("q", m) for m in (fresh, stale)] == original
    assert original == [True, False]
    assert counted == []
