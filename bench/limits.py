"""Issue 21's figures, group `limits`: flow control holds exactly, and costs at most two calls a job.

In-process against the moto server (as `calls`): the api handler submits, the worker handler is fed
the main queue batch by batch, a refused job's fresh delayed message included (real time passes
here: its DelaySeconds). Limits are set through the functions' JOB_LIMITS, as CDK context `jobLimits`
sets them.

- overhead: AWS calls per plain job (`bench_io`, 0 s, ten in one batch) with a `concurrency` limit and
  no contention, once the key has been used (its first use is one PutItem, once per key): 4 without a
  limit, one start and one release with it: goal <= 6;
- concurrency: 40 webhook deliveries to one host under `concurrency` 2: the receiver's peak of
  requests in flight at once: goal <= 2;
- perSecond: 30 jobs under `perSecond` 5, `burst` 2: the most that started in any 1 s window:
  goal <= 7 (perSecond + burst);
- waiting costs nothing: of the jobs those two runs deferred (each several times), how many ended
  `dead` or with more than one attempt: goal 0;
- fairness: client alpha submits 1,000 jobs, then client beta 10; the worker is fed five batches at a
  time, as five pollers would, from the moto server, which serves message groups as SQS fair queues do
  (`local_runtime/fair_queues.py`): the share of alpha's backlog still waiting when beta's 10 are all
  done: goal >= 0.5.
"""

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from typing import Any

from pydantic import BaseModel

from bench import jobs
from bench.calls import _counted_run, _drive, _figure, serving
from bench.report import Figure
from bench.stack import API, WORKER, CallLog, Stack, api_event, context, reset_handlers
from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType

PLAIN_JOBS = 10
ALPHA_JOBS, BETA_JOBS, POLLERS = 1000, 10, 5
DELIVERIES = 40
HOST_LIMIT = 2
RATE, BURST, RATED_JOBS = 5, 2, 30
RATED = "bench_rated"
_starts: list[float] = []


class _Empty(BaseModel):
    pass


def _rated(_payload: _Empty, _context: JobContext) -> None:
    _starts.append(time.time())


class _Receiver(BaseHTTPRequestHandler):
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        with _Receiver.lock:
            _Receiver.in_flight += 1
            _Receiver.peak = max(_Receiver.peak, _Receiver.in_flight)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(0.05)
        with _Receiver.lock:
            _Receiver.in_flight -= 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


def _limits(overrides: dict[str, dict[str, Any]]) -> None:
    os.environ[config.ENV_JOB_LIMITS] = json.dumps(overrides)
    reset_handlers()


def _jobs_after(job_ids: list[str]) -> list[Any]:
    from lambdas.handlers.rest.services import services

    store = services().store
    return [store.get(job_id) for job_id in job_ids]


def _run(stack: Stack, bodies: list[dict[str, Any]]) -> list[str]:
    stack.drain()
    reset_handlers()
    job_ids = [jobs.submit(body) for body in bodies]
    _drive(stack, CallLog(), job_ids)
    return job_ids


def _submit_as(key_id: str, body: dict[str, Any]) -> str:
    from lambdas.handlers import api

    event = api_event(body)
    event["requestContext"]["identity"]["apiKeyId"] = key_id
    response = api.handler(event, context("api"))
    assert response["statusCode"] == 202, response
    job_id: str = json.loads(response["body"])["jobId"]
    return job_id


def _fairness(stack: Stack) -> Figure:
    stack.drain()
    _limits({})
    body = {"type": jobs.NAME, "payload": {"seconds": 0}}
    alpha = [_submit_as("alpha", body) for _ in range(ALPHA_JOBS)]
    beta = [_submit_as("beta", body) for _ in range(BETA_JOBS)]
    rounds = 0
    while not all(job is not None and job.status.finished for job in _jobs_after(beta)):
        batches = [jobs.receive(stack, 10) for _ in range(POLLERS)]  # all in flight at once
        with ThreadPoolExecutor(POLLERS) as pool:
            list(pool.map(jobs.run_batch, [b for b in batches if b]))
        rounds += 1
        assert rounds < ALPHA_JOBS, "beta's jobs never finished"
    left = sum(1 for job in _jobs_after(alpha) if job is not None and not job.status.finished)
    return Figure(
        "alpha's backlog waiting when beta is done",
        left / ALPHA_JOBS,
        0.5,
        f"{left} of {ALPHA_JOBS} alpha jobs waiting after {rounds} rounds of {POLLERS} batches; beta's {BETA_JOBS} done",
        at_least=True,
        unit="",
    )


def measure(stack: Stack) -> list[Figure]:
    stack.use(API, WORKER)
    os.environ[config.ENV_WEBHOOK_ALLOW_LOOPBACK] = "true"
    jobs.install()
    if RATED not in registry.names():
        registry.register(JobType(RATED, _Empty, _rated))
    _limits({jobs.NAME: {"concurrency": 100}})
    _run(stack, [{"type": jobs.NAME, "payload": {"seconds": 0}}])  # the key's first use: its one PutItem
    calls, _ = _counted_run(stack, [{"type": jobs.NAME, "payload": {"seconds": 0}}] * PLAIN_JOBS)
    figures = [_figure("AWS calls per plain job, limited", calls, PLAIN_JOBS, 6)]

    _limits({"webhook_delivery": {"concurrency": HOST_LIMIT}})
    with serving(_Receiver) as url:
        endpoints = [{"id": f"ep{i}", "url": f"{url}/hook/{i}"} for i in range(DELIVERIES)]
        body = {"type": "webhook_fanout", "payload": {"eventType": "e", "data": {}, "endpoints": endpoints}}
        (fan_out,) = _run(stack, [body])
    figures.append(
        Figure(
            f"deliveries in flight at once, limit {HOST_LIMIT}",
            _Receiver.peak,
            HOST_LIMIT,
            f"peak {_Receiver.peak} over {DELIVERIES} deliveries to one host",
            unit="",
        )
    )
    from lambdas.jobs.types.webhook_delivery import delivery_id

    deferred = [delivery_id(fan_out, e["id"]) for e in endpoints]

    _limits({RATED: {"perSecond": RATE, "burst": BURST}})
    _starts.clear()
    rated = _run(stack, [{"type": RATED, "payload": {}}] * RATED_JOBS)
    busiest = max(sum(1 for t in _starts if start <= t < start + 1) for start in _starts)
    figures.append(
        Figure(
            f"starts in any 1 s window, {RATE}/s burst {BURST}",
            busiest,
            RATE + BURST,
            f"{len(_starts)} starts over {_starts[-1] - _starts[0]:.1f} s",
            unit="",
        )
    )
    figures.append(_fairness(stack))
    ended = _jobs_after(deferred + rated)
    hurt = [j for j in ended if j is None or j.status.value != "done" or j.attempts != 1]
    waits = sum(1 for j in ended if j is not None and j.waited_seconds > 0)
    figures.append(
        Figure(
            "waiting jobs that died or lost an attempt",
            len(hurt),
            0,
            f"{len(ended)} jobs, {waits} of them deferred (waited in all {sum(j.waited_seconds for j in ended if j)} s)",
            unit="",
        )
    )
    return figures
