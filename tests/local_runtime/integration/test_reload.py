"""`make run` reloads code: `CodeWatcher` sees a changed file, and a recycled pool runs the new code on
its next invocation while the one in progress finishes on the old (local_runtime/reload.py's rules)."""

import os
import threading
import time
from pathlib import Path

from local_runtime.lambda_pool import FunctionConfig, FunctionPool
from local_runtime.reload import CodeWatcher
from local_runtime.state import REPO_ROOT

HANDLER = """
import time

VERSION = {version}


def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return {{"version": VERSION}}
"""


def _pool(code: Path) -> FunctionPool:
    config = FunctionConfig(
        name="reload-test",
        handler="reloaded_handler.handler",
        timeout_seconds=10,
        memory_mb=128,
        environment={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(code)]),
            "AWS_REGION": "us-east-1",
        },
    )
    return FunctionPool(config, max_environments=2, log_sink=lambda _name, _line: None)


def test_a_recycled_pool_runs_the_new_code_and_lets_the_running_invocation_finish(tmp_path: Path) -> None:
    """Seen to fail with `recycle` not bumping the generation (the warm process kept version 1), and
    with it killing busy environments (the running invocation ended as Runtime.ExitError)."""
    module = tmp_path / "reloaded_handler.py"
    module.write_text(HANDLER.format(version=1))
    changes: list[list[str]] = []
    watcher = CodeWatcher([tmp_path], changes.append)
    pool = _pool(tmp_path)
    try:
        assert pool.invoke({}).result == {"version": 1}
        running: dict[str, object] = {}
        slow = threading.Thread(target=lambda: running.update(result=pool.invoke({"sleep": 2})))
        slow.start()
        while pool.invocations < 2:  # the slow one holds the warm (version 1) environment
            time.sleep(0.01)
        # when: the code changes while an invocation runs
        module.write_text(HANDLER.format(version=22))
        assert watcher.check() == [str(module)]
        pool.recycle()
        # then: the next invocation runs the new code, the running one ends on the old, untouched
        assert pool.invoke({}).result == {"version": 22}
        slow.join()
        invocation = running["result"]
        assert invocation.ok  # type: ignore[attr-defined]
        assert invocation.result == {"version": 1}  # type: ignore[attr-defined]
        # and the environment it ran in is not reused: every later invocation runs the new code
        assert [pool.invoke({}).result for _ in range(3)] == [{"version": 22}] * 3
        assert changes == [[str(module)]]
        assert watcher.check() == []
    finally:
        pool.close()
