"""`offload`'s command line; every failure ends as one line on stderr and an exit code (errors.py)."""

from __future__ import annotations

import argparse
import sys

import offload_cli
from offload_cli import commands
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import resolve_target


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="offload", description=offload_cli.__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    root.add_argument(
        "--url", help="the API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/v1/"
    )
    root.add_argument("--api-key", help="the API key's value")
    root.add_argument(
        "--outputs-file",
        help="outputs of `cdk deploy --outputs-file` (ApiUrl, ApiKeyId, WebhookSigningSecretArn)",
    )
    subcommands = root.add_subparsers(dest="command", required=True)

    submit = subcommands.add_parser("submit", help="submit a job")
    submit.add_argument("type", help="job type, e.g. send_email")
    submit.add_argument(
        "--payload", default="{}", help="the job's payload as JSON, or @FILE, or @- for standard input"
    )
    submit.add_argument("--max-attempts", type=int)
    submit.add_argument("--delay", type=int, help="seconds before the first attempt")
    submit.add_argument("--idempotency-key")
    _wait_options(submit)

    status = subcommands.add_parser("status", help="show a job")
    status.add_argument("job_id")
    _wait_options(status)

    tail = subcommands.add_parser("tail", help="print job transitions as they happen")
    tail.add_argument("job_ids", nargs="*", help="jobs to follow (required on a deployed stack)")
    tail.add_argument("-v", "--verbose", action="store_true", help="every log line (local runtime)")

    subcommands.add_parser(
        "webhook-secret", help="print the whsec_... secret webhook receivers verify signatures with"
    )
    return root


def _wait_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--wait", action="store_true", help="wait until the job is done (exit 0) or dead (1)"
    )
    command.add_argument("--timeout", type=float, default=300, help="seconds --wait waits (then exit 6)")


def run(args: argparse.Namespace) -> int:
    if args.command == "webhook-secret":
        return commands.webhook_secret(args)
    target = resolve_target(args)
    if args.command == "submit":
        return commands.submit(target, args)
    if args.command == "status":
        return commands.status(target, args)
    return commands.tail(target, args)


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
