"""Lateness of jobs given a start time beyond SQS's 900 s horizon, then rescheduled to the near future.

JOBS jobs of `bench_io` (0 s) are submitted with `runAt` two hours ahead (so `scheduled`: no message yet),
then each is rescheduled (POST /jobs/{id}/reschedule) to a time LEAD_SECONDS ahead, spread SPREAD_SECONDS
apart. A job's lateness is its first attempt's `startedAt` less its new `runAt`. The goal (issue 25): the
median within the worker mapping's batching window plus a second; the max is shown beside it. The stack's
defaults apply (the 900 s horizon, the 5 s window), except the usage plan's limits (bench.stack.CONTEXT).
"""

import statistics
import time
from datetime import UTC, datetime

import requests

from bench.report import Figure, median
from bench.stack import CONTEXT, silenced_fds, template
from bench.waiting_type import NAME
from lambdas import config
from local_runtime.runtime import LocalRuntime, RuntimeSettings

JOBS = 50
LEAD_SECONDS = 3.0
SPREAD_SECONDS = 0.1
AHEAD_SECONDS = 2 * 60 * 60
TIMEOUT_SECONDS = 120


def _at(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def measure() -> list[Figure]:
    settings = RuntimeSettings(
        port=0,
        quiet=True,
        state_file=None,
        template=template(),
        context=dict(CONTEXT),
        extra_modules=("bench.waiting_type",),
    )
    with silenced_fds():
        runtime = LocalRuntime(settings).start()
    try:
        lateness = _round(runtime)
    finally:
        runtime.stop()
    window = float(config.WORKER_BATCHING_WINDOW_SECONDS)
    detail = f"{JOBS} jobs: median {median(lateness):.2f} s, max {max(lateness):.2f} s, batching window {window:g} s"
    return [
        Figure("rescheduled job start, median lateness", median(lateness), window + 1, detail, unit="s"),
        Figure(
            "rescheduled job start, max lateness",
            max(lateness),
            window + 1,
            f"stdev {statistics.pstdev(lateness):.2f} s",
            checked=False,
            unit="s",
        ),
    ]


def _round(runtime: LocalRuntime) -> list[float]:
    session = requests.Session()
    session.headers["x-api-key"] = runtime.api_key
    far = time.time() + AHEAD_SECONDS
    ids = []
    for _ in range(JOBS):
        answer = session.post(
            f"{runtime.url}jobs", json={"type": NAME, "payload": {"seconds": 0}, "runAt": _at(far)}
        )
        assert answer.json()["status"] == "scheduled", answer.text
        ids.append(answer.json()["jobId"])
    start = time.time() + LEAD_SECONDS
    run_at = {}
    for index, job_id in enumerate(ids):
        run_at[job_id] = start + index * SPREAD_SECONDS
        moved = session.post(f"{runtime.url}jobs/{job_id}/reschedule", json={"runAt": _at(run_at[job_id])})
        assert moved.status_code == 200, moved.text
    lateness: dict[str, float] = {}
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while len(lateness) < JOBS and time.monotonic() < deadline:
        for job_id in ids:
            if job_id in lateness:
                continue
            job = session.get(f"{runtime.url}jobs/{job_id}").json()
            if job["status"] == "done":
                started = datetime.fromisoformat(job["history"][0]["startedAt"]).timestamp()
                lateness[job_id] = started - run_at[job_id]
        time.sleep(0.5)
    assert len(lateness) == JOBS, f"{JOBS - len(lateness)} jobs not done in {TIMEOUT_SECONDS} s"
    return list(lateness.values())
