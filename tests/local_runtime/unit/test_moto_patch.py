"""The DynamoDB write serialisation cannot be dropped silently by a moto upgrade."""

import pytest
from moto.dynamodb.models import DynamoDBBackend

from local_runtime.moto_main import ITEM_OPERATIONS, MotoPatchError, serialise_item_operations
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
