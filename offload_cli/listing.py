"""The reading commands: `list`, `show` and `deliveries`. Each returns its exit code.

Lists follow `nextCursor` page after page until `--limit` entries are printed or the list ends, so
`--limit 500` costs five requests of 100. `--json` prints each entry as the API gave it, one JSON
object per line, as the pages arrive (`jq -s` makes an array of them).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from offload_cli.api import get_job, job_path, pages
from offload_cli.errors import ExitCode
from offload_cli.render import terminal_width
from offload_cli.target import Target
from offload_cli.views import (
    children_table,
    deliveries_table,
    history_table,
    job_detail,
    job_table,
    section,
)

SHOW_CHILDREN = 50  # `show` prints the first children and deliveries; `deliveries ID` pages further
SHOW_DELIVERIES = 20
INDENT = 2  # a section's lines are indented by two spaces


def list_jobs(target: Target, args: argparse.Namespace) -> int:
    query = {name: value for name, value in (("status", args.status), ("type", args.type)) if value}
    jobs = pages(target, "jobs", "jobs", args.limit, query)
    return _listing(jobs, args.json, f"no jobs{_filters(args)}", job_table)


def show(target: Target, args: argparse.Namespace) -> int:
    """The job, its attempts, and for a fan-out its children and their deliveries, as sections."""
    job = get_job(target, args.job_id)
    children = _children(target, job)
    delivery_log = _deliveries(target, job)
    if args.json:
        print(json.dumps({"job": job, "children": children, "deliveries": delivery_log}, indent=2))
        return ExitCode.OK
    width, now = terminal_width(), datetime.now(UTC)
    lines = job_detail(job, now, width)
    if "history" in job:
        history = job.get("history") or []
        lines += section("attempts (oldest first)", history_table(history, now, width - INDENT), "none yet")
    if children is not None:
        title = _title("children", children, SHOW_CHILDREN, "")
        lines += section(title, children_table(children, width - INDENT), "none")
    if delivery_log is not None:
        title = _title(
            "deliveries", delivery_log, SHOW_DELIVERIES, f"; all: offload deliveries {args.job_id}"
        )
        lines += section(title, deliveries_table(delivery_log, now, width - INDENT), "none yet")
    _print(lines)
    return ExitCode.OK


def deliveries(target: Target, args: argparse.Namespace) -> int:
    entries = pages(target, job_path(args.job_id, "deliveries"), "deliveries", args.limit)
    return _listing(entries, args.json, f"no deliveries for job {args.job_id}", deliveries_table)


def _listing(
    entries: Iterable[dict[str, Any]],
    as_json: bool,
    empty: str,
    table: Callable[[Sequence[dict[str, Any]], datetime, int], list[str]],
) -> int:
    """A paged listing as JSON lines, or as a table fitted to the terminal (`empty` when there is none)."""
    if as_json:
        return _json_lines(entries)
    found = list(entries)
    if not found:
        print(empty)
        return ExitCode.OK
    _print(table(found, datetime.now(UTC), terminal_width()))
    return ExitCode.OK


def _children(target: Target, job: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A fan-out parent's first children; None for a job that has none (no request made)."""
    if not job.get("children"):
        return None
    return list(pages(target, job_path(job["jobId"], "children"), "children", SHOW_CHILDREN))


def _deliveries(target: Target, job: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Delivery attempts exist for a fan-out parent (its children's) and a delivery child (its own)."""
    if not job.get("children") and not job.get("parentId"):
        return None
    return list(pages(target, job_path(job["jobId"], "deliveries"), "deliveries", SHOW_DELIVERIES))


def _title(title: str, entries: list[dict[str, Any]], shown: int, more: str) -> str:
    return f"{title} (the first {shown}{more})" if len(entries) >= shown else title


def _filters(args: argparse.Namespace) -> str:
    named = [f"{name} {value}" for name, value in (("status", args.status), ("type", args.type)) if value]
    return f" with {' and '.join(named)}" if named else ""


def _json_lines(entries: Iterable[dict[str, Any]]) -> int:
    for entry in entries:
        print(json.dumps(entry), flush=True)
    return ExitCode.OK


def _print(lines: list[str]) -> None:
    print("\n".join(lines))
