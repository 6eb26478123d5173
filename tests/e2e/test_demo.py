"""`make demo` against a running local runtime: it exits 0 and says what it saw."""

import pytest

from local_runtime import demo
from local_runtime.runtime import LocalRuntime

pytestmark = pytest.mark.slow


def test_the_demo_exits_0_saying_it_saw_one_alert_for_its_fan_out(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seen to fail (exit 1) with the demo waiting for one alert per dead delivery again, which the
    fan-out's single alert never gives."""
    monkeypatch.setenv("OFFLOAD_URL", runtime.url)
    monkeypatch.setenv("OFFLOAD_API_KEY", runtime.api_key)

    code = demo.main()

    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), out + err
    assert "demo: as expected: 3 jobs done, 2 dead deliveries, 1 alert for their fan-out" in out
    assert out.count("  ALERT ") == 1
