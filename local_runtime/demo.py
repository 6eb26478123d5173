"""`make demo`: one job of each type through the running local runtime, followed to its end state.

- an email (SES in moto);
- a webhook fan-out to three receivers on 127.0.0.1: one answers 200, one always fails (its delivery
  retries, then dies and raises an alert), one answers 410 Gone (dead at once, no retries);
- an image from tests/assets, uploaded through `POST /uploads` and turned into thumbnails.

It ends saying what it saw: every job done, the two dead deliveries, and the one alert of their fan-out
(exit 0), or what was not as expected (exit 1).

Start the runtime first (`make run` in another terminal).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from local_runtime.state import REPO_ROOT
from offload_cli.api import call, get_job
from offload_cli.commands import FINISHED
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target, resolve_target

IMAGE = REPO_ROOT / "tests" / "assets" / "landscape.jpg"
# Receiver path -> the status it always answers.
RECEIVERS = {"/ok": 200, "/down": 503, "/gone": 410}
FANOUT_ATTEMPTS = 3
# The dead-letter queue's batching window is 30 s; its letters then wait for their fan-out to finish.
ALERT_WAIT_SECONDS = 90


@dataclass
class Receivers:
    """Webhook receivers on loopback that always answer the same status per path."""

    received: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receivers.received.append((self.path, dict(self.headers.items()), body))
                self.send_response(RECEIVERS.get(self.path, 404))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _post(target: Target, path: str, body: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = call(target, "POST", target.endpoint(path), json=body)
    return document


def submit_email(target: Target) -> str:
    payload = {"to": ["ada@example.com"], "subject": "Hello from offload", "text": "Sent by the local demo."}
    return str(_post(target, "jobs", {"type": "send_email", "payload": payload})["jobId"])


def submit_fanout(target: Target, receivers: Receivers) -> str:
    payload = {
        "eventType": "demo.ping",
        "data": {"message": "hello, receivers"},
        "endpoints": [{"id": path.strip("/"), "url": receivers.url(path)} for path in RECEIVERS],
    }
    body = {"type": "webhook_fanout", "payload": payload, "maxAttempts": FANOUT_ATTEMPTS}
    return str(_post(target, "jobs", body)["jobId"])


def submit_image(target: Target) -> str:
    upload = _post(target, "uploads", {"filename": IMAGE.name, "contentType": "image/jpeg"})
    # A presigned POST: its fields as they were signed, then the file (S3 wants it last).
    stored = requests.post(
        upload["url"], data=upload["fields"], files={"file": (IMAGE.name, IMAGE.read_bytes())}, timeout=30
    )
    if stored.status_code >= 300:
        raise CliError(f"the upload was refused: {stored.status_code} {stored.text[:200]}", ExitCode.FAILED)
    return str(_post(target, "jobs", {"type": "process_file", "payload": {"key": upload["key"]}})["jobId"])


def wait_all(
    target: Target, jobs: dict[str, str], timeout: float, on_change: Callable[[str, dict[str, Any]], None]
) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    latest: dict[str, dict[str, Any]] = {}
    while True:
        for name, job_id in jobs.items():
            job = get_job(target, job_id)
            if latest.get(name, {}).get("status") != job["status"]:
                on_change(name, job)
            latest[name] = job
        if all(job["status"] in FINISHED for job in latest.values()):
            return latest
        if time.monotonic() > deadline:
            raise CliError(
                f"not finished after {timeout:.0f} s: {json.dumps(latest, indent=2)}", ExitCode.WAIT_TIMEOUT
            )
        time.sleep(1)


def _local(target: Target, what: str, **params: str) -> Any:
    return call(target, "GET", target.local_base + what, headers=target.local_headers(), params=params)


def dead_jobs(target: Target, after: int) -> list[dict[str, Any]]:
    return [
        e for e in _local(target, "logs", event="job_transition", after=str(after)) if e.get("to") == "dead"
    ]


def _summary(job: dict[str, Any]) -> str:
    text = f"{job['status']:<5} after {job['attempts']} attempt(s)"
    if job.get("children"):
        children = job["children"]
        text += f"; children: {children['delivered']} delivered, {children['failed']} failed of {children['total']}"
    if job.get("result") is not None:
        text += f"; result: {json.dumps(job['result'])[:120]}"
    if job.get("lastError"):
        text += f"; last error: {job['lastError'][:120]}"
    return text


def main() -> int:
    try:
        target = resolve_target(_no_flags())
    except CliError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    if not target.local:
        print("demo: it runs against the local runtime only (`make run`)", file=sys.stderr)
        return 1
    receivers = Receivers()
    try:
        return _run(target, receivers)
    except CliError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        receivers.close()


def _run(target: Target, receivers: Receivers) -> int:
    log_mark = max((e["seq"] for e in _local(target, "logs")), default=0)
    alerts_before = len(_local(target, "alerts"))
    jobs = {
        "email": submit_email(target),
        "webhook fan-out": submit_fanout(target, receivers),
        "image": submit_image(target),
    }
    for name, job_id in jobs.items():
        print(f"submitted {name:<16} {job_id}")
    print("following them (the failing endpoint is retried with backoff before it is declared dead)...")
    finished = wait_all(
        target, jobs, timeout=600, on_change=lambda name, job: print(f"  {name:<16} {job['status']}")
    )
    print("\nEnd states:")
    for name, job in finished.items():
        print(f"  {name:<16} {_summary(job)}")
    dead = dead_jobs(target, log_mark)
    print("\nDead jobs:")
    for entry in dead:
        print(f"  {entry['jobType']} {entry['jobId']}: {entry.get('error', '')}")
    fanout = jobs["webhook fan-out"]
    # A fan-out's dead deliveries raise one alert together, naming the fan-out (docs/internals/fan-out.md).
    print(
        f"\nWaiting for the fan-out's one alert (the dead-letter consumer gathers letters for up to {ALERT_WAIT_SECONDS} s)..."
    )
    deadline = time.monotonic() + ALERT_WAIT_SECONDS
    alerts: list[dict[str, Any]] = []
    while time.monotonic() < deadline and not _about(alerts, fanout):
        time.sleep(1)
        alerts = _local(target, "alerts")[alerts_before:]
    for alert in alerts:
        print(f"  ALERT {alert['subject']}")
    print(
        f"\nwebhook receivers got {len(receivers.received)} request(s): "
        + ", ".join(p for p, _, _ in receivers.received)
    )
    problems = [
        *(
            f"the {name} job is {finished[name]['status']}, not done"
            for name in jobs
            if finished[name]["status"] != "done"
        ),
        *(
            []
            if len(dead) >= 2
            else [f"{len(dead)} dead deliveries, not 2 (/down after its retries, /gone at once)"]
        ),
        *(
            []
            if len(_about(alerts, fanout)) == 1
            else [f"{len(_about(alerts, fanout))} alerts name the fan-out, not 1"]
        ),
    ]
    for problem in problems:
        print(f"demo: not as expected: {problem}", file=sys.stderr)
    if not problems:
        print(f"\ndemo: as expected: 3 jobs done, {len(dead)} dead deliveries, 1 alert for their fan-out")
    return 1 if problems else 0


def _about(alerts: list[dict[str, Any]], job_id: str) -> list[dict[str, Any]]:
    return [a for a in alerts if job_id in str(a.get("subject"))]


def _no_flags() -> Any:
    import argparse

    return argparse.Namespace(url=None, api_key=None, outputs_file=None)


if __name__ == "__main__":
    sys.exit(main())
