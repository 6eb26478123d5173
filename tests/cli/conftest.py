"""The CLI tests' shared pieces: a real HTTP server on 127.0.0.1 playing the API, and no runtime."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from offload_cli import target as target_module
from tests.support.webhook_receiver import Receiver


@pytest.fixture
def api() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


@pytest.fixture(autouse=True)
def _no_runtime(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test talks to a runtime a developer may have running, or to their AWS account."""
    monkeypatch.setattr(target_module, "STATE_FILE", tmp_path / "no-runtime.json")
    for name in ("OFFLOAD_URL", "OFFLOAD_API_KEY"):
        monkeypatch.delenv(name, raising=False)
