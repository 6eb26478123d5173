"""How a job transition reads on a terminal: shared by `offload tail` and the local runtime's console."""

from __future__ import annotations

import time
from typing import Any

TRANSITION = "job_transition"  # the `event` of the log line lambdas.observability.log_transition writes
_ARROW = "\u2192"


def render_transition(record: dict[str, Any]) -> str:
    """One readable line for a `job_transition` log record."""
    stamp = time.strftime("%H:%M:%S", time.localtime(record.get("time", time.time())))
    line = (
        f"{stamp}  job {record.get('jobId', '?')}  {record.get('jobType', '?'):<16} "
        f"{record.get('from', '?'):>10} {_ARROW} {record.get('to', '?'):<10} attempt {record.get('attempt', '?')}"
    )
    if record.get("error"):
        line += f"  ({record['error']})"
    return line
