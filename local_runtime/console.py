"""What the runtime shows: one line per job transition (and alerts), everything else kept for `--verbose`.

Every line a function writes is kept (bounded) with a sequence number so `offload tail` and the tests
can read what happened after a given point.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from typing import Any, TextIO

TRANSITION = "job_transition"
_ARROW = "\u2192"


def short_function_name(handler: str) -> str:
    """`lambdas.handlers.worker.handler` -> `worker`."""
    parts = handler.split(".")
    return parts[-2] if len(parts) >= 2 else handler


def render_transition(record: dict[str, Any]) -> str:
    """One readable line for a `job_transition` log record."""
    stamp = time.strftime("%H:%M:%S", time.localtime(record.get("time", time.time())))
    line = (
        f"{stamp}  job {record.get('jobId', '?')}  {record.get('jobType', '?'):<14} "
        f"{record.get('from', '?'):>10} {_ARROW} {record.get('to', '?'):<10} attempt {record.get('attempt', '?')}"
    )
    if record.get("error"):
        line += f"  ({record['error']})"
    return line


class Console:
    def __init__(self, verbose: bool = False, quiet: bool = False, out: TextIO | None = None) -> None:
        self.verbose = verbose
        self.quiet = quiet
        self._out = out or sys.stdout
        self._lock = threading.Lock()
        self._entries: deque[dict[str, Any]] = deque(maxlen=20_000)
        self._sequence = 0

    def say(self, text: str) -> None:
        if self.quiet:
            return
        with self._lock:
            print(text, file=self._out, flush=True)

    def function_line(self, function: str, line: str) -> None:
        """A line a function wrote to stdout or stderr (Powertools logs are JSON lines)."""
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            record = {"message": line}
        entry = {**record, "function": function, "time": time.time()}
        with self._lock:
            self._sequence += 1
            entry["seq"] = self._sequence
            self._entries.append(entry)
        if entry.get("event") == TRANSITION:
            self.say(render_transition(entry))
        elif self.verbose:
            self.say(f"[{function}] {line}")

    def entries(self, after: int = 0, event: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                e for e in self._entries if e["seq"] > after and (event is None or e.get("event") == event)
            ]
