"""`make run` keeps up with the job types' code: when a Python file of `lambdas/` or of a `jobPackages`
folder changes, every function's warm environments are replaced (`FunctionPool.recycle`), and nothing
else: moto's state (jobs, queues, keys, secrets) and the front door stay as they are.

Rules:
- a change is a `.py` file added, removed, or with another size or modification time, polled every
  `interval` seconds (no dependency on an OS file-watching API);
- an invocation in progress runs to its end on the code it started with; the next one cold-starts;
- what the template holds is not re-synthesized: a type's new `function`, `settings_model` or
  `secrets` takes a restart of `make run` (its new function or secret does not exist before).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

Snapshot = dict[str, tuple[int, int]]


def snapshot(roots: Iterable[Path]) -> Snapshot:
    found: Snapshot = {}
    for root in roots:
        for path in root.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:  # removed while listed
                continue
            found[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return found


class CodeWatcher:
    def __init__(self, roots: Iterable[Path], on_change: Callable[[list[str]], None], interval: float = 1.0):
        self._roots = [Path(root) for root in roots]
        self._on_change = on_change
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="code-watcher", daemon=True)
        self._seen = snapshot(self._roots)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def check(self) -> list[str]:
        """The files changed since the last check (and calls `on_change` with them when there are any)."""
        now = snapshot(self._roots)
        changed = sorted(
            path for path in now.keys() | self._seen.keys() if now.get(path) != self._seen.get(path)
        )
        self._seen = now
        if changed:
            self._on_change(changed)
        return changed

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            self.check()
