"""The DynamoDB write serialisation cannot be dropped silently by a moto upgrade; backends are looked up once."""

import pytest
from moto.dynamodb.models import DynamoDBBackend
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

from local_runtime.moto_main import (
    ITEM_OPERATIONS,
    MotoPatchError,
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
