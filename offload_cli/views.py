"""What `offload list`, `show` and `deliveries` print, from the API's JSON as docs/openapi.json describes it.

Pure functions of the documents, the time and the terminal's width, so each reads the same in a test.
A field the API left out prints as `-` rather than failing: an older stack answers with fewer fields.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from offload_cli.render import age, cut, parse_time, table

LIST_HEADERS = ("ID", "TYPE", "STATUS", "PRIORITY", "ATTEMPTS", "AGE", "LAST ERROR")
HISTORY_HEADERS = ("ATTEMPT", "STARTED", "TOOK", "OUTCOME", "ERROR")
CHILD_HEADERS = ("ID", "ENDPOINT", "STATUS", "ATTEMPTS", "URL", "LAST ERROR")
DELIVERY_HEADERS = ("WHEN", "ENDPOINT", "ATTEMPT", "OUTCOME", "HTTP", "LATENCY", "ERROR OR RESPONSE")
URL_ROOM = 40  # a child's URL column: enough to tell endpoints apart, the rest goes to the error
LABEL_WIDTH = 14


def text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def job_table(jobs: Sequence[dict[str, Any]], now: datetime, width: int) -> list[str]:
    """`offload list`: one row per JobSummary; the age is the time since the job was created."""
    rows = [
        (
            text(job.get("jobId")),
            text(job.get("type")),
            text(job.get("status")),
            text(job.get("priority")),
            f"{text(job.get('attempts'))}/{text(job.get('maxAttempts'))}",
            age(job.get("createdAt"), now),
            text(job.get("lastError")) if job.get("lastError") else "",
        )
        for job in jobs
    ]
    return table(LIST_HEADERS, rows, width)


def job_detail(job: dict[str, Any], now: datetime, width: int) -> list[str]:
    """`offload show`'s first section: what the job is, where it stands, and why it stopped."""
    fields: list[tuple[str, str | None]] = [
        ("attempts", f"{text(job.get('attempts'))} of {text(job.get('maxAttempts'))}"),
        ("priority", job.get("priority")),
        ("created", _moment(job.get("createdAt"), now)),
        ("status since", _moment(job.get("statusAt"), now) if job.get("statusAt") else None),
        ("updated", _moment(job.get("updatedAt"), now)),
        ("next attempt", job.get("nextAttemptAt")),
        ("parent", job.get("parentId")),
        ("children", _children_counts(job.get("children"))),
        ("last error", job.get("lastError")),
        ("result", None if job.get("result") is None else json.dumps(job["result"])),
    ]
    lines = [f"job {text(job.get('jobId'))}  {text(job.get('type'))}  {text(job.get('status'))}"]
    room = width - LABEL_WIDTH - 2
    lines += [f"  {label:<{LABEL_WIDTH}}{cut(value, room)}" for label, value in fields if value]
    lines += [f"  {'download':<{LABEL_WIDTH}}{cut(d.get('url'), room)}" for d in job.get("downloads") or []]
    return lines


def history_table(history: Sequence[dict[str, Any]], now: datetime, width: int) -> list[str]:
    """The last attempts, oldest first; an attempt without an outcome is still running."""
    rows = [
        (
            text(entry.get("attempt")),
            _ago(entry.get("startedAt"), now),
            _took(entry.get("startedAt"), entry.get("endedAt")),
            text(entry.get("outcome") or "running"),
            entry.get("error") or "",
        )
        for entry in history
    ]
    return table(HISTORY_HEADERS, rows, width)


def children_table(children: Sequence[dict[str, Any]], width: int) -> list[str]:
    rows = [
        (
            text(child.get("jobId")),
            text(child.get("endpointId")),
            text(child.get("status")),
            text(child.get("attempts")),
            cut(text(child.get("url")), URL_ROOM),
            child.get("lastError") or "",
        )
        for child in children
    ]
    return table(CHILD_HEADERS, rows, width)


def deliveries_table(deliveries: Sequence[dict[str, Any]], now: datetime, width: int) -> list[str]:
    """Each delivery attempt: how long ago, to which endpoint, how it went; the error, else the response.

    Times show as ages to leave the width to the error; `--json` has the exact ones."""
    rows = [
        (
            _ago(entry.get("attemptedAt"), now),
            text(entry.get("endpointId")),
            text(entry.get("attempt")),
            text(entry.get("outcome")),
            text(entry.get("httpStatus")),
            "-" if entry.get("latencyMs") is None else f"{entry['latencyMs']} ms",
            entry.get("error") or entry.get("response") or "",
        )
        for entry in deliveries
    ]
    return table(DELIVERY_HEADERS, rows, width)


def section(title: str, lines: list[str], empty: str) -> list[str]:
    """A titled block of `show`: a blank line, the title, then its lines indented (or what is missing)."""
    return ["", title, *(f"  {line}" for line in lines or [empty])]


def _moment(value: Any, now: datetime) -> str:
    return f"{text(value)} ({_ago(value, now)})" if parse_time(value) else text(value)


def _ago(value: Any, now: datetime) -> str:
    return f"{age(value, now)} ago" if parse_time(value) else "-"


def _took(started: Any, ended: Any) -> str:
    begin, end = parse_time(started), parse_time(ended)
    if begin is None or end is None:
        return "-"
    return f"{max((end - begin).total_seconds(), 0):.1f} s"


def _children_counts(counts: Any) -> str | None:
    if not isinstance(counts, dict):
        return None
    named = ("pending", "delivered", "failed", "cancelled")
    return f"{text(counts.get('total'))} total: " + ", ".join(
        f"{counts[name]} {name}" for name in named if name in counts
    )
