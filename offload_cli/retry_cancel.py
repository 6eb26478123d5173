"""The acting commands: `retry ID...`, `retry --all-dead`, `cancel ID...`. Each returns its exit code.

With several ids each job is acted on and reported on its own: a success is a line on stdout, a
refusal (`409 not_retryable`, `404 not_found`, ...) one line on stderr, and the others still go ahead.
The exit code is 0 when every one succeeded, else the highest code among the failures (4 when the API
refused some). An API that cannot be reached ends the command at once (3): the rest would fail alike.

`retry --all-dead` asks the API for a bulk retry (`POST /jobs/retry`), which only the operator key may
start; the work runs in an ops job, whose id is printed (`--wait` follows it to the end).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from offload_cli.api import call, get_job, job_path
from offload_cli.commands import FINISHED
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target

DONE_AS = {"retry": "retried", "cancel": "cancelled"}
FORBIDDEN = "forbidden"  # the API's error code for a client key on an operator route


def retry(target: Target, args: argparse.Namespace) -> int:
    if args.all_dead:
        if args.job_ids:
            raise CliError("give job ids or --all-dead, not both", ExitCode.USAGE)
        body = {"status": "dead", **({"type": args.type} if args.type else {})}
        return bulk(target, "retry", body, args.wait, args.timeout)
    if args.type:
        raise CliError("--type picks the jobs of --all-dead; with job ids, leave it out", ExitCode.USAGE)
    if not args.job_ids:
        raise CliError("give the ids of the jobs to retry, or --all-dead", ExitCode.USAGE)
    return each(target, "retry", args.job_ids)


def cancel(target: Target, args: argparse.Namespace) -> int:
    return each(target, "cancel", args.job_ids)


def each(target: Target, action: str, job_ids: list[str]) -> int:
    """POST `/jobs/{id}/{action}` for every id in turn, reporting each outcome on its own line."""
    failures: list[ExitCode] = []
    for job_id in job_ids:
        try:
            job = call(target, "POST", target.endpoint(job_path(job_id, action)))
        except CliError as error:
            if error.code == ExitCode.UNREACHABLE:
                raise
            print(f"offload: {error}", file=sys.stderr, flush=True)
            failures.append(error.code)
            continue
        ops_id = str(job.get("jobId", job_id))
        if ops_id != job_id:  # a large fan-out: the API handed the work to an ops job
            print(
                f"{job_id}  {action} runs as ops job {ops_id} (see it with: offload show {ops_id})",
                flush=True,
            )
            continue
        done, status = DONE_AS[action], job.get("status", "?")
        print(f"{job_id}  {done}" if status == done else f"{job_id}  {done}, now {status}", flush=True)
    return max(failures, default=ExitCode.OK)


def bulk(target: Target, action: str, body: dict[str, Any], wait: bool, timeout: float) -> int:
    """Start a bulk action; print its ops job, and with `wait` how it ended."""
    try:
        started = call(target, "POST", target.endpoint(f"jobs/{action}"), json=body)
    except CliError as error:
        if error.api_code != FORBIDDEN:
            raise
        raise CliError(
            f"bulk {action} needs the operator key and this key is a client's: "
            "give the operator's (--key operator on the local runtime, or --api-key)",
            ExitCode.REFUSED,
        ) from None
    ops_id = str(started.get("jobId"))
    print(f"bulk {action} started as ops job {ops_id} (see it with: offload show {ops_id})", flush=True)
    return _follow(target, ops_id, timeout) if wait else ExitCode.OK


def _follow(target: Target, ops_id: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    job = get_job(target, ops_id)
    while job.get("status") not in FINISHED:
        if time.monotonic() > deadline:
            raise CliError(
                f"ops job {ops_id} is still {job.get('status')} after {timeout:.0f} s", ExitCode.WAIT_TIMEOUT
            )
        time.sleep(1)
        job = get_job(target, ops_id)
    why = f" ({job['lastError']})" if job.get("lastError") else ""
    print(f"ops job {ops_id} {job.get('status')}{why}: {_progress(job.get('result'))}")
    return ExitCode.OK if job.get("status") == "done" else ExitCode.DEAD


def _progress(result: Any) -> str:
    """`matched 12, applied 11, skipped 1` from the ops job's result."""
    if not isinstance(result, dict):
        return "no result"
    return ", ".join(f"{name} {result[name]}" for name in ("matched", "applied", "skipped") if name in result)
