"""A second runtime on a taken port fails at once with one line naming the port, and a runtime's
state file (.local/runtime.json) is only ever removed or replaced by the runtime that wrote it."""

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_runtime import runtime as runtime_module
from local_runtime.front_door import PortInUseError
from local_runtime.runtime import LocalRuntime, RuntimeSettings
from local_runtime.state import REPO_ROOT, remove_state, write_state


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def other_runtime() -> Iterator[int]:
    """The pid of a live process that plays the runtime already running."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process.pid
    process.kill()
    process.wait()


def test_a_taken_port_fails_before_the_slow_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, taken_port: int
) -> None:
    def synthesized_first(*_args: object) -> None:
        raise AssertionError("the port was checked only after synthesizing the stack")

    monkeypatch.setattr(runtime_module, "local_template", synthesized_first)
    runtime = LocalRuntime(RuntimeSettings(port=taken_port, quiet=True, state_file=tmp_path / "runtime.json"))

    with pytest.raises(PortInUseError, match=f"port {taken_port} on 127.0.0.1 is already in use"):
        runtime.start()


def test_make_run_on_a_taken_port_says_so_in_one_line(taken_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "local_runtime", "--port", str(taken_port)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"port {taken_port} on 127.0.0.1 is already in use" in done.stderr
    assert f"OFFLOAD_LOCAL_PORT={taken_port + 1} make run" in done.stderr


def test_a_failed_start_leaves_the_live_runtimes_state_file(
    tmp_path: Path, taken_port: int, other_runtime: int
) -> None:
    state = tmp_path / "runtime.json"
    state.write_text(
        json.dumps({"url": f"http://127.0.0.1:{taken_port}/v1/", "apiKey": "k", "pid": other_runtime})
    )
    before = state.read_text()
    runtime = LocalRuntime(RuntimeSettings(port=taken_port, quiet=True, state_file=state))

    with pytest.raises(PortInUseError):
        runtime.start()

    assert state.read_text() == before


def test_the_state_file_is_replaced_only_when_its_runtime_is_gone(tmp_path: Path, other_runtime: int) -> None:
    state = tmp_path / "runtime.json"
    state.write_text(json.dumps({"url": "http://127.0.0.1:3000/v1/", "pid": other_runtime}))

    kept = write_state(state, {"url": "http://127.0.0.1:3001/v1/"})
    remove_state(state)

    assert not kept
    assert json.loads(state.read_text())["pid"] == other_runtime

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    state.write_text(json.dumps({"url": "http://127.0.0.1:3000/v1/", "pid": int(gone.stdout)}))

    assert write_state(state, {"url": "http://127.0.0.1:3001/v1/"})
    assert json.loads(state.read_text()) == {"url": "http://127.0.0.1:3001/v1/", "pid": os.getpid()}
    assert state.stat().st_mode & 0o777 == 0o600


def test_a_runtime_removes_only_its_own_state_file(tmp_path: Path) -> None:
    state = tmp_path / "runtime.json"
    write_state(state, {"url": "http://127.0.0.1:3000/v1/"})

    remove_state(state)

    assert not state.exists()
