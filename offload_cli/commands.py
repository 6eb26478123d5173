"""The commands: submit, status, tail, event and webhook-secret. Each returns its exit code."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from offload_cli.api import call, get_job, job_path, pages
from offload_cli.errors import CliError, ExitCode
from offload_cli.render import TRANSITION, render_transition
from offload_cli.target import Target, key_id_of

FINISHED = {"done", "dead", "cancelled"}  # the states a job never leaves on its own
PRIORITIES = ("high", "normal", "low")  # the API's `priority` (docs/openapi.json)


def submit(target: Target, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"type": args.type, "payload": _payload(args.payload)}
    if args.max_attempts is not None:
        body["maxAttempts"] = args.max_attempts
    if args.delay is not None:
        body["delaySeconds"] = args.delay
    if args.priority is not None:
        body["priority"] = args.priority
    # Without --idempotency-key, a key of this run's own: offload_client's retries (429, 5xx, a dropped
    # connection) then send it again, so a retried submit returns the same job, never a second one.
    headers = {"idempotency-key": args.idempotency_key or str(uuid.uuid4())}
    document = call(target, "POST", target.endpoint("jobs"), headers=headers, json=body)
    if args.wait:
        # stdout stays one JSON document: the job as it ended (it carries the id), not the 202 before it.
        return wait(target, str(document["jobId"]), args.timeout)
    print(json.dumps(document, indent=2))
    return ExitCode.OK


def event(target: Target, args: argparse.Namespace) -> int:
    """`offload event ID NAME [--data JSON]`: hand the event to the workflow waiting for it."""
    body = {"name": args.name, "data": _payload(args.data, "--data")}
    document = call(target, "POST", target.endpoint(job_path(args.job_id, "events")), json=body)
    print(f"{document['jobId']}  event {document['name']} delivered")
    return ExitCode.OK


def _payload(text: str, option: str = "--payload") -> Any:
    if text.startswith("@"):
        try:
            text = sys.stdin.read() if text == "@-" else Path(text[1:]).read_text()
        except OSError as error:
            raise CliError(
                f"cannot read {option} {text}: {error.strerror or error}", ExitCode.USAGE
            ) from None
    try:
        return json.loads(text)
    except ValueError as error:
        raise CliError(f"{option} is not JSON: {error}", ExitCode.USAGE) from None


def wait(target: Target, job_id: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    job = get_job(target, job_id)
    while job["status"] not in FINISHED:
        if time.monotonic() > deadline:
            print(json.dumps(job, indent=2))
            raise CliError(
                f"job {job_id} is still {job['status']} after {timeout:.0f} s", ExitCode.WAIT_TIMEOUT
            )
        time.sleep(1)
        job = get_job(target, job_id)
    print(json.dumps(job, indent=2))
    return ExitCode.OK if job["status"] == "done" else ExitCode.DEAD


def status(target: Target, args: argparse.Namespace) -> int:
    if args.wait:
        return wait(target, args.job_id, args.timeout)
    print(json.dumps(get_job(target, args.job_id), indent=2))
    return ExitCode.OK


def tail(target: Target, args: argparse.Namespace, stop_after: float | None = None) -> int:
    """Print transitions as they happen, until Ctrl-C (or `stop_after` seconds, for tests)."""
    ends = None if stop_after is None else time.monotonic() + stop_after
    if target.local and not args.job_ids:
        return _tail_local(target, args.verbose, ends)
    if not args.job_ids:
        raise CliError("on a deployed stack, `offload tail` follows the job ids you give it", ExitCode.USAGE)
    return _tail_jobs(target, args.job_ids, ends)


def _tail_local(target: Target, verbose: bool, ends: float | None) -> int:
    after = 0
    while ends is None or time.monotonic() < ends:
        query = {"after": str(after)} if verbose else {"after": str(after), "event": TRANSITION}
        for entry in call(
            target, "GET", target.local_base + "logs", headers=target.local_headers(), params=query
        ):
            after = max(after, entry["seq"])
            if entry.get("event") == TRANSITION:
                print(render_transition(entry), flush=True)
            else:
                print(f"[{entry.get('function')}] {json.dumps(entry)}", flush=True)
        time.sleep(0.5)
    return ExitCode.OK


def _tail_jobs(target: Target, job_ids: list[str], ends: float | None) -> int:
    seen: dict[str, tuple[str, int]] = {}
    while (ends is None or time.monotonic() < ends) and not (
        len(seen) == len(job_ids) and all(s in FINISHED for s, _ in seen.values())
    ):
        for job_id in job_ids:
            job = get_job(target, job_id)
            now = (job["status"], job["attempts"])
            if seen.get(job_id) != now:
                before = seen.get(job_id, ("", 0))[0] or "-"
                print(render_transition(_as_transition(job_id, job, before)), flush=True)
                seen[job_id] = now
        time.sleep(2)
    return ExitCode.OK


def _as_transition(job_id: str, job: dict[str, Any], before: str) -> dict[str, Any]:
    return {
        "jobId": job_id,
        "jobType": job["type"],
        "from": before,
        "to": job["status"],
        "attempt": job["attempts"],
        "error": job.get("lastError") if job["status"] in {"pending", "dead"} else None,
    }


# GET /limits lists a type once per page its keys span: at most this many such entries are read.
_MOST_LIMIT_ENTRIES = 100_000


def limits(target: Target, args: argparse.Namespace) -> int:
    """Each limited job type: its limit, then one line per key in use (running, tokens, pause, waiting),
    page after page (a type whose keys go on over a page is printed once)."""
    merged: list[dict[str, Any]] = []
    for limit in pages(target, "limits", "limits", _MOST_LIMIT_ENTRIES):
        if merged and merged[-1]["type"] == limit["type"]:
            merged[-1]["keys"] += limit["keys"]
        else:
            merged.append(limit)
    if args.json:
        print(json.dumps({"limits": merged}, indent=2))
        return ExitCode.OK
    for limit in merged:
        rule = ", ".join(
            f"{name} {limit[name]}"
            for name in ("concurrency", "perSecond", "burst")
            if limit.get(name) is not None
        )
        print(f"{limit['type']}: {rule}, key {limit['key'] or 'none'}")
        for key in limit["keys"]:
            tokens = "" if key.get("tokens") is None else f", {key['tokens']:g} tokens"
            paused = f", paused until {key['pausedUntil']}" if key.get("pausedUntil") else ""
            print(f"  {key['key']}: {key['running']} running{tokens}{paused}, {key['waiting']} waiting")
    return ExitCode.OK


def webhook_secret(target: Target, args: argparse.Namespace) -> int:
    """Print the `whsec_...` secret the key's receivers verify with (or, for the operator, a named
    client's); `--rotate` makes that client a new one (the old one signs beside it for 24 h)."""
    client = key_id_of(args, args.client) if args.client else None
    if args.rotate:
        if client is None:
            raise CliError("--rotate needs --client (the client whose secret to rotate)", ExitCode.USAGE)
        document = call(target, "POST", target.endpoint("webhook-secret/rotate"), json={"client": client})
    else:
        document = call(
            target, "GET", target.endpoint("webhook-secret"), params={"client": client} if client else None
        )
    print(json.dumps(document, indent=2) if args.json else document["secret"])
    return ExitCode.OK
