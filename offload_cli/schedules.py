"""`offload schedule create|list|show|pause|resume|run|delete` and `offload reschedule`, through
offload_client's schedule methods (api.client), failures as one line and an exit code (api._failures)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from offload_client import Schedule

from offload_cli.api import _failures, client
from offload_cli.commands import PRIORITIES
from offload_cli.commands import _payload as read_payload
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target

_CLIENT_HELP = "the operator's key: the client whose schedule(s) these are (its API key id, or IAM name)"


def add_commands(subcommands: Any) -> None:
    schedule = subcommands.add_parser(
        "schedule", help="recurring schedules: create, list, show, pause, resume, run, delete"
    )
    actions = schedule.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="a schedule that creates a job at each firing")
    create.add_argument("name")
    create.add_argument(
        "expression", help="cron(0 9 ? * MON-FRI *) or rate(15 minutes), as EventBridge writes them"
    )
    create.add_argument("type", help="the job type each firing creates")
    create.add_argument(
        "--payload", default="{}", help="the job's payload as JSON, or @FILE, or @- for standard input"
    )
    create.add_argument("--time-zone", default="UTC", help="an IANA time zone, e.g. Europe/Paris")
    create.add_argument(
        "--overlap", choices=("allow", "skip"), help="skip: no job while the last is not finished"
    )
    create.add_argument("--max-attempts", type=int)
    create.add_argument("--priority", choices=PRIORITIES, help="its jobs' priority (default normal)")
    create.add_argument("--paused", action="store_true")
    listing = actions.add_parser(
        "list", help="the key's schedules (the operator's: every client's), failing ones first"
    )
    listing.add_argument("--client", help=_CLIENT_HELP)
    for name, what in (
        ("show", "a schedule, its next fire times and last jobs (JSON)"),
        ("pause", "stop its firings"),
        ("resume", "fire again"),
        ("run", "fire once now"),
        ("delete", "delete it (its jobs stay)"),
    ):
        action = actions.add_parser(name, help=what)
        action.add_argument("schedule_id")
        action.add_argument("--client", help=_CLIENT_HELP)

    reschedule = subcommands.add_parser("reschedule", help="move a job that has not started to a new time")
    reschedule.add_argument("job_id")
    reschedule.add_argument("run_at", help="RFC 3339 with a UTC offset, e.g. 2027-01-01T09:00:00+01:00")


def schedule(target: Target, args: argparse.Namespace) -> int:
    api = client(target)
    with _failures(target):
        if args.action == "create":
            created = api.create_schedule(
                args.name,
                args.expression,
                args.type,
                read_payload(args.payload),
                time_zone=args.time_zone,
                max_attempts=args.max_attempts,
                priority=args.priority,
                overlap=args.overlap,
                paused=args.paused,
            )
            print(_line(created), flush=True)
        elif args.action == "list":
            # Failing ones first across every page (the API orders within a page), then as listed.
            for found in sorted(api.schedules(args.client), key=lambda s: not s.failing):
                print(_line(found), flush=True)
        elif args.action == "show":
            print(json.dumps(api.schedule(args.schedule_id, args.client).raw, indent=2), flush=True)
        elif args.action == "run":
            job = api.run_schedule(args.schedule_id, args.client)
            print(f"{args.schedule_id}  ran: job {job.job_id} {job.status}", flush=True)
        else:
            changed = {"pause": api.pause, "resume": api.resume, "delete": api.delete_schedule}[args.action]
            done = changed(args.schedule_id, args.client)
            print(f"{done.schedule_id}  {'deleted' if args.action == 'delete' else done.state}", flush=True)
    return ExitCode.OK


def reschedule(target: Target, args: argparse.Namespace) -> int:
    try:
        run_at = datetime.fromisoformat(args.run_at)
    except ValueError:
        raise CliError(f"{args.run_at!r} is not an RFC 3339 time", ExitCode.USAGE) from None
    if run_at.tzinfo is None:
        raise CliError("the time needs a UTC offset (Z or +hh:mm)", ExitCode.USAGE)
    with _failures(target):
        job = client(target).reschedule(args.job_id, run_at)
    print(f"{job.job_id}  {job.status}, runs at {job.run_at}", flush=True)
    return ExitCode.OK


def _line(found: Schedule) -> str:
    upcoming = found.next_fire_times[0] if found.next_fire_times else "-"
    line = (
        f"{found.schedule_id}  {found.owner}  {found.state:<7}  {found.expression} ({found.time_zone})  "
        f"next {upcoming}  {found.name}"
    )
    return f"{line}\n  failing: {found.last_error}" if found.failing else line
