"""`offload`'s command line; every failure ends as one line on stderr and an exit code (errors.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import offload_cli
from lambdas import config
from lambdas.models.job import JobStatus
from offload_cli import commands, doctor, listing, retry_cancel, schedules
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target, resolve_target

STATUSES = [status.value for status in JobStatus]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="offload", description=offload_cli.__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    root.add_argument(
        "--url", help="the API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/v1/"
    )
    root.add_argument("--api-key", help="the API key's value")
    root.add_argument(
        "--iam",
        action="store_true",
        help="sign with SigV4 from botocore's credentials (environment, profile, role): a stack deployed "
        "with auth=iam (OFFLOAD_AUTH=iam does the same; an outputs file without keys implies it)",
    )
    root.add_argument(
        "--key",
        metavar="NAME",
        help="use the key called NAME (a client's, or `operator`) of the local runtime or of --outputs-file",
    )
    root.add_argument(
        "--outputs-file",
        help="outputs of `cdk deploy --outputs-file` (ApiUrl, ApiKeyId..., OperatorKeyId)",
    )
    subcommands = root.add_subparsers(dest="command", required=True)
    _job_commands(subcommands)
    _operating_commands(subcommands)
    schedules.add_commands(subcommands)
    secret = subcommands.add_parser(
        "webhook-secret", help="print the whsec_... secret the key's webhook receivers verify signatures with"
    )
    secret.add_argument(
        "--client", metavar="NAME", help="the operator: this client's (a key name, or its API key id)"
    )
    secret.add_argument(
        "--rotate",
        action="store_true",
        help="the operator: give --client a new secret (the old one signs 24 h more)",
    )
    secret.add_argument("--json", action="store_true", help="the API's document (rotation and overlap times)")
    limits = subcommands.add_parser(
        "limits", help="the operator: each job type's flow-control limit and its keys in use (GET /limits)"
    )
    limits.add_argument("--json", action="store_true", help="the API's document")
    return root


def _job_commands(subcommands: Any) -> None:
    check = subcommands.add_parser(
        "doctor", help="a deploy's smoke test: a job submitted and done, the alarms there and none in ALARM"
    )
    check.add_argument(
        "--stack",
        default=config.STACK_ID,
        help="the stack's name, whose alarms are checked (Offload-<stage>)",
    )
    check.add_argument("--timeout", type=float, default=180, help="seconds to wait for the job (default 180)")

    submit = subcommands.add_parser("submit", help="submit a job")
    submit.add_argument("type", help="job type, e.g. send_email")
    submit.add_argument(
        "--payload", default="{}", help="the job's payload as JSON, or @FILE, or @- for standard input"
    )
    submit.add_argument("--max-attempts", type=int)
    submit.add_argument("--delay", type=int, help="seconds before the first attempt")
    submit.add_argument(
        "--priority",
        choices=commands.PRIORITIES,
        help="high: ahead of a backlog and of your waiting jobs (default normal)",
    )
    submit.add_argument("--idempotency-key")
    _wait_options(submit)

    status = subcommands.add_parser("status", help="show a job as the API returns it (JSON)")
    status.add_argument("job_id")
    _wait_options(status)

    tail = subcommands.add_parser("tail", help="print job transitions as they happen")
    tail.add_argument("job_ids", nargs="*", help="jobs to follow (required on a deployed stack)")
    tail.add_argument("-v", "--verbose", action="store_true", help="every log line (local runtime)")


def _operating_commands(subcommands: Any) -> None:
    listing = subcommands.add_parser("list", help="list jobs, newest first (a table, or --json)")
    listing.add_argument("--status", choices=STATUSES, help="only jobs in this state, newest first into it")
    listing.add_argument("--type", help="only jobs of this type")
    _list_options(listing, default=25)

    show = subcommands.add_parser("show", help="a job's detail, attempts, children and deliveries")
    show.add_argument("job_id")
    show.add_argument("--json", action="store_true", help="the documents as the API returned them")

    retry = subcommands.add_parser("retry", help="retry dead jobs (a dead fan-out: its dead deliveries)")
    retry.add_argument("job_ids", nargs="*", metavar="ID", help="the jobs to retry")
    retry.add_argument(
        "--all-dead", action="store_true", help="every dead job, in an ops job (the operator key only)"
    )
    retry.add_argument("--type", help="with --all-dead: only the dead jobs of this type")
    _wait_options(retry, what="with --all-dead: wait until the ops job has finished")

    cancel = subcommands.add_parser(
        "cancel", help="cancel pending or scheduled jobs (a waiting fan-out: its pending deliveries)"
    )
    cancel.add_argument("job_ids", nargs="+", metavar="ID", help="the jobs to cancel")

    event = subcommands.add_parser(
        "event", help="send an event to a workflow waiting for it (POST /jobs/{id}/events)"
    )
    event.add_argument("job_id", metavar="ID")
    event.add_argument("name", help="the event's name, as the workflow's wait_for_event names it")
    event.add_argument("--data", default="null", help="the event's data: JSON, @file or @- for stdin")

    deliveries = subcommands.add_parser("deliveries", help="a fan-out's (or one delivery's) webhook attempts")
    deliveries.add_argument("job_id")
    _list_options(deliveries, default=100)


def _list_options(command: argparse.ArgumentParser, default: int) -> None:
    command.add_argument(
        "--limit",
        type=_positive,
        default=default,
        help=f"at most this many, page after page (default {default})",
    )
    command.add_argument("--json", action="store_true", help="one JSON object per line, as the API gave it")


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return number


def _wait_options(
    command: argparse.ArgumentParser, what: str = "wait until the job is done (exit 0), dead or cancelled (1)"
) -> None:
    command.add_argument("--wait", action="store_true", help=what)
    command.add_argument("--timeout", type=float, default=300, help="seconds --wait waits (then exit 6)")


COMMANDS: dict[str, Callable[[Target, argparse.Namespace], int]] = {
    "submit": commands.submit,
    "status": commands.status,
    "tail": commands.tail,
    "list": listing.list_jobs,
    "show": listing.show,
    "deliveries": listing.deliveries,
    "retry": retry_cancel.retry,
    "cancel": retry_cancel.cancel,
    "event": commands.event,
    "webhook-secret": commands.webhook_secret,
    "limits": commands.limits,
    "schedule": schedules.schedule,
    "reschedule": schedules.reschedule,
    "doctor": doctor.doctor,
}


def run(args: argparse.Namespace) -> int:
    return COMMANDS[args.command](resolve_target(args), args)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)  # bad flags: argparse prints usage and exits 2 (ExitCode.USAGE)
    try:
        return run(args)
    except CliError as error:
        print(f"offload: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except Exception as error:  # a bug, still reported as one line rather than a traceback
        print(f"offload: internal error ({type(error).__name__}: {error}); please report it", file=sys.stderr)
        return ExitCode.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
