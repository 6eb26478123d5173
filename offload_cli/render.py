"""How jobs read on a terminal: transitions (shared by `offload tail` and the local runtime's console),
aligned tables cut to the terminal's width, and ages."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from datetime import UTC, datetime
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


GAP = "  "
ELLIPSIS = "\u2026"


def terminal_width() -> int:
    """The terminal's columns (`COLUMNS` wins); 100 when the output is not a terminal."""
    return shutil.get_terminal_size((100, 24)).columns


def cut(text: str | None, room: int) -> str:
    """One line of at most `room` characters: whitespace runs become one space, a cut ends in `…`."""
    line = " ".join((text or "").split())
    if len(line) <= room:
        return line
    return line[: room - 1] + ELLIPSIS if room > 0 else ""


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Aligned columns; the last one (free text) is cut so that no line is wider than `width`.

    No rows, no table (not even the headers): the caller says what is missing in words."""
    if not rows:
        return []
    widths = [max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(headers[:-1])]
    lines = []
    for row in [headers, *rows]:
        left = "".join(cell.ljust(size) + GAP for cell, size in zip(row, widths, strict=False))
        lines.append((left + cut(row[-1], width - len(left))).rstrip())
    return lines


def parse_time(value: Any) -> datetime | None:
    """The API's `2026-11-30T03:23:06.123Z`, or None for a missing or foreign value."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def age(value: Any, now: datetime) -> str:
    """How long ago, in its largest unit: `45s`, `12m`, `3h`, `9d` (`?` for a missing time)."""
    moment = parse_time(value)
    if moment is None:
        return "?"
    seconds = max(int((now - moment).total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
