"""`make demo` against a running local runtime: it exits 0 and says what it saw."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from local_runtime import demo
from local_runtime.runtime import LocalRuntime
from offload_cli import target

pytestmark = pytest.mark.slow


def test_the_demo_exits_0_saying_it_saw_one_alert_for_its_fan_out(
    runtime: LocalRuntime,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Seen to fail (exit 1) with the demo waiting for one alert per dead delivery again, which the
    fan-out's single alert never gives.

    The demo finds the runtime as `make demo` does, through the state file the runtime writes: the
    runtime's /_local/ endpoints answer the operator's key alone (they show every client's jobs), and
    the state is where the demo reads that key, while it submits with the client's key. Given only
    OFFLOAD_URL and a client's key, as before, it has no operator key and its first /_local/ read is 403."""
    state = tmp_path / "runtime.json"
    monkeypatch.setattr(runtime, "settings", replace(runtime.settings, state_file=state))
    runtime._write_state()
    assert state.exists()
    monkeypatch.setattr(target, "STATE_FILE", state)
    monkeypatch.delenv("OFFLOAD_URL", raising=False)
    monkeypatch.delenv("OFFLOAD_API_KEY", raising=False)

    code = demo.main()

    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), out + err
    assert "demo: as expected: 3 jobs done, 2 dead deliveries, 1 alert for their fan-out" in out
    # the runtime is shared: another test's fan-out may alert meanwhile, so only the demo's is counted
    fanout = re.search(r"submitted webhook fan-out\s+(\S+)", out)
    assert fanout is not None, out
    assert sum(line.startswith("  ALERT ") and fanout[1] in line for line in out.splitlines()) == 1
