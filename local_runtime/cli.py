"""`offload`: submit jobs and follow them, on the local runtime (default) or a deployed stack.

Where it sends requests, first match wins:
1. `--url` and `--api-key` (or OFFLOAD_URL and OFFLOAD_API_KEY);
2. `--outputs-file outputs.json` written by `cdk deploy --outputs-file`: the stack's ApiUrl, and the
   key's value read once through API Gateway with your AWS credentials (unless `--api-key` is given);
3. the local runtime started by `make run` (it writes .local/runtime.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

from lambdas import config
from local_runtime.console import TRANSITION, render_transition
from local_runtime.runtime import STATE_FILE

FINISHED = {"done", "dead"}
HTTP_TIMEOUT = 30


class CliError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    url: str  # the API stage's base URL, ending with /
    api_key: str
    local: bool

    def endpoint(self, path: str) -> str:
        return self.url + path.lstrip("/")

    @property
    def local_base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/_local/"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "content-type": "application/json"}


def resolve_target(args: argparse.Namespace, state_file: Path = STATE_FILE) -> Target:
    url = args.url or os.environ.get("OFFLOAD_URL")
    api_key = args.api_key or os.environ.get("OFFLOAD_API_KEY")
    if url:
        if not api_key:
            raise CliError("--url needs --api-key (or OFFLOAD_API_KEY)")
        # Only the local runtime serves loopback: its /_local/ endpoints are there too.
        local = urlsplit(url).hostname in {"127.0.0.1", "localhost", "::1"}
        return Target(url.rstrip("/") + "/", api_key, local=local)
    if args.outputs_file:
        outputs = _stack_outputs(Path(args.outputs_file))
        if not api_key:
            api_key = _api_key_value(outputs["ApiKeyId"])
        return Target(outputs["ApiUrl"].rstrip("/") + "/", api_key, local=False)
    if not state_file.exists():
        raise CliError("no local runtime is running (start it with `make run`), and no --url was given")
    state = json.loads(state_file.read_text())
    return Target(state["url"], api_key or state["apiKey"], local=True)


def _stack_outputs(path: Path) -> dict[str, str]:
    document = json.loads(path.read_text())
    outputs: dict[str, str] = document.get(config.STACK_ID, document)
    if "ApiUrl" not in outputs:
        raise CliError(f"{path} has no ApiUrl output of the {config.STACK_ID} stack")
    return outputs


def _api_key_value(api_key_id: str) -> str:
    import boto3

    value: str = boto3.client("apigateway").get_api_key(apiKey=api_key_id, includeValue=True)["value"]
    return value


def _call(method: str, url: str, target: Target, **kwargs: Any) -> requests.Response:
    try:
        return requests.request(method, url, headers=target.headers(), timeout=HTTP_TIMEOUT, **kwargs)
    except requests.ConnectionError:
        hint = " (is `make run` still running?)" if target.local else ""
        raise CliError(f"cannot reach {url}{hint}") from None


def _json_or_fail(response: requests.Response) -> Any:
    try:
        document = response.json()
    except ValueError:
        document = response.text
    if response.status_code >= 400:
        raise CliError(f"HTTP {response.status_code}: {json.dumps(document)}")
    return document


def submit(target: Target, args: argparse.Namespace) -> int:
    text = args.payload
    if text.startswith("@"):
        text = sys.stdin.read() if text == "@-" else Path(text[1:]).read_text()
    try:
        payload = json.loads(text)
    except ValueError as error:
        raise CliError(f"--payload is not JSON: {error}") from None
    body: dict[str, Any] = {"type": args.type, "payload": payload}
    if args.max_attempts is not None:
        body["maxAttempts"] = args.max_attempts
    if args.delay is not None:
        body["delaySeconds"] = args.delay
    headers = {"idempotency-key": args.idempotency_key} if args.idempotency_key else {}
    response = requests.post(
        target.endpoint("jobs"), json=body, headers={**target.headers(), **headers}, timeout=HTTP_TIMEOUT
    )
    document = _json_or_fail(response)
    print(json.dumps(document, indent=2))
    if args.wait:
        return _wait(target, document["jobId"], args.timeout)
    return 0


def get_job(target: Target, job_id: str) -> dict[str, Any]:
    document: dict[str, Any] = _json_or_fail(_call("GET", target.endpoint(f"jobs/{job_id}"), target))
    return document


def _wait(target: Target, job_id: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    job = get_job(target, job_id)
    while job["status"] not in FINISHED:
        if time.monotonic() > deadline:
            print(json.dumps(job, indent=2))
            raise CliError(f"job {job_id} is still {job['status']} after {timeout:.0f} s")
        time.sleep(1)
        job = get_job(target, job_id)
    print(json.dumps(job, indent=2))
    return 0 if job["status"] == "done" else 2


def status(target: Target, args: argparse.Namespace) -> int:
    if args.wait:
        return _wait(target, args.job_id, args.timeout)
    print(json.dumps(get_job(target, args.job_id), indent=2))
    return 0


def tail(target: Target, args: argparse.Namespace, stop_after: float | None = None) -> int:
    """Print transitions as they happen, until Ctrl-C (or `stop_after` seconds, for tests)."""
    ends = None if stop_after is None else time.monotonic() + stop_after
    if target.local and not args.job_ids:
        return _tail_local(target, args.verbose, ends)
    if not args.job_ids:
        raise CliError("on a deployed stack, `offload tail` follows the job ids you give it")
    return _tail_jobs(target, args.job_ids, ends)


def _tail_local(target: Target, verbose: bool, ends: float | None) -> int:
    after = 0
    while ends is None or time.monotonic() < ends:
        query = {"after": str(after)} if verbose else {"after": str(after), "event": TRANSITION}
        for entry in _json_or_fail(_call("GET", target.local_base + "logs", target, params=query)):
            after = max(after, entry["seq"])
            if entry.get("event") == TRANSITION:
                print(render_transition(entry), flush=True)
            else:
                print(f"[{entry.get('function')}] {json.dumps(entry)}", flush=True)
        time.sleep(0.5)
    return 0


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
                print(
                    render_transition(
                        {
                            "jobId": job_id,
                            "jobType": job["type"],
                            "from": before,
                            "to": job["status"],
                            "attempt": job["attempts"],
                            "error": job.get("lastError") if job["status"] in {"pending", "dead"} else None,
                        }
                    ),
                    flush=True,
                )
                seen[job_id] = now
        time.sleep(2)
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="offload", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    root.add_argument(
        "--url", help="the API's base URL, e.g. https://abc.execute-api.eu-west-1.amazonaws.com/v1/"
    )
    root.add_argument("--api-key", help="the API key's value")
    root.add_argument("--outputs-file", help="outputs of `cdk deploy --outputs-file` (ApiUrl, ApiKeyId)")
    commands = root.add_subparsers(dest="command", required=True)

    submit_cmd = commands.add_parser("submit", help="submit a job")
    submit_cmd.add_argument("type", help="job type, e.g. send_email")
    submit_cmd.add_argument(
        "--payload", default="{}", help="the job's payload as JSON, or @FILE, or @- for standard input"
    )
    submit_cmd.add_argument("--max-attempts", type=int)
    submit_cmd.add_argument("--delay", type=int, help="seconds before the first attempt")
    submit_cmd.add_argument("--idempotency-key")
    submit_cmd.add_argument("--wait", action="store_true", help="wait until the job is done or dead")
    submit_cmd.add_argument("--timeout", type=float, default=300)

    status_cmd = commands.add_parser("status", help="show a job")
    status_cmd.add_argument("job_id")
    status_cmd.add_argument("--wait", action="store_true", help="wait until the job is done or dead")
    status_cmd.add_argument("--timeout", type=float, default=300)

    tail_cmd = commands.add_parser("tail", help="print job transitions as they happen")
    tail_cmd.add_argument("job_ids", nargs="*", help="jobs to follow (required on a deployed stack)")
    tail_cmd.add_argument("-v", "--verbose", action="store_true", help="every log line (local runtime)")
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        target = resolve_target(args)
        if args.command == "submit":
            return submit(target, args)
        if args.command == "status":
            return status(target, args)
        return tail(target, args)
    except CliError as error:
        print(f"offload: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
