"""SnapStart: environments restored from one snapshot do not share random numbers or clients.

The hooks run as Lambda's runtime runs them after a restore: every callable of `snapshot_restore_py`'s
registry (`get_after_restore`), in order, with its arguments.
"""

import random
from collections.abc import Iterator

import pytest
import snapshot_restore_py

from lambdas.handlers import snapshot
from lambdas.store import clients


def _restore() -> None:
    for function, args, kwargs in snapshot_restore_py.get_after_restore():
        function(*args, **kwargs)


@pytest.fixture
def registered() -> Iterator[None]:
    """The hook registered once more for the test, taken out after it."""
    registry = snapshot_restore_py.get_after_restore()
    size = len(registry)
    assert snapshot.register()
    yield
    del registry[size:]


def test_every_function_registers_the_restore_hook() -> None:
    """Breaks when `snapshot.register()` is taken out of lambdas/handlers/startup.py, which every
    handler imports first."""
    import lambdas.handlers.startup  # noqa: F401

    assert any(hook is snapshot.after_restore for hook, _, _ in snapshot_restore_py.get_after_restore())


@pytest.mark.usefixtures("registered")
def test_two_environments_restored_from_one_snapshot_draw_different_numbers() -> None:
    """Breaks when `random.seed()` is taken out of `after_restore`: both draw the snapshot's next number."""
    random.seed(40)
    snapshotted = random.getstate()
    draws = []
    for _ in range(2):
        random.setstate(snapshotted)
        _restore()
        draws.append(random.random())
    assert draws[0] != draws[1]


@pytest.mark.usefixtures("registered")
def test_a_restored_environment_builds_its_own_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """Breaks when `clients.reset()` is taken out of `after_restore`: the snapshot's client is reused."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    before = clients.client("sqs")
    _restore()
    assert clients.client("sqs") is not before
