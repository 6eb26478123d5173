"""Issue 36's figures, group `bursts`: a backlog under a `perSecond` limit waits once per job, fairly.

A simulation in virtual time, running the production code against moto in-process: the worker
(`Worker.process`: admission, the claim, the run, the outcome, a refused job's wait) and the limiter
(`Limits`, `LimitStore`) make their real DynamoDB calls on the synthesized template's tables; what the
simulation stands in for is SQS and the clock. A message sent with `DelaySeconds` d at virtual time t
is delivered at t + d (in order of due time; every due message is handed to a worker of its own at
once, so the limit, not the pollers, sets the pace). A message holding a reserved start is handed over
at that start: the worker's wait for it (SQS delays are whole seconds, so it comes up to one early) is
modelled as SQS's, so no message acts at a time before the ones due earlier have. A worker's other
waits move that message's clock only. Every AWS call counts: DynamoDB's by a botocore hook, SQS's (each SendMessage and
ChangeMessageVisibility; an event source mapping's polling is not a function's call) by the simulation.

Bursts of 100, 300 and 1,000 jobs of one owner under `perSecond` 14 (send_email's default):
- claims per job (`pending -> processing`): goal <= 2, and not growing with the burst;
- time until the last one is done against n / 14 s: goal <= 1.3;
- AWS calls per job: goal <= 10 (a job that never waits makes 4 and its start 1);
- the most starts in any 1 s window: goal <= perSecond + burst (15);
- jobs that spent more than one attempt or ended other than `done`: goal 0.
Fairness: alpha submits 200, then beta 10, same type: alpha's jobs still waiting when beta's 10 are
done: goal >= 150.

Priorities:
- alpha submits 200 normal jobs, then one `high` job, same limited type: the high job's start, in the
  simulation's virtual time, after its submission: goal <= 3 s (its owner's 200 go first without it);
- 2,000 unlimited jobs queued, then one `high` job: wall time from its submission to its start, with
  the template's two mappings of the shared worker (its queue's and its high queue's) played by the
  local runtime's own event source (`local_runtime/esm.py`) invoking the worker handler in this
  process, on in-process moto: goal <= 5 s, and most of the backlog still queued when it starts.
"""

import heapq
import itertools
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from pydantic import BaseModel

from bench.report import Figure
from bench.stack import counting_calls, in_process_moto, in_process_stack, quiet
from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType
from lambdas.models.job import NewJob, Priority
from local_runtime.context import LambdaContext

NAME = "bench_burst"
RATE = 14
BURSTS = (100, 300, 1000)
ALPHA, BETA = 200, 10
CLAIMS_PER_JOB, TIME_RATIO, CALLS_PER_JOB = 2.0, 1.3, 10.0
FREE = "bench_unlimited"  # a type without a limit
BEHIND_LIMITED, HIGH_LIMITED_SECONDS = 200, 3.0
BACKLOG, HIGH_BACKLOG_SECONDS = 2000, 5.0


class _Empty(BaseModel):
    pass


@dataclass(order=True)
class _Due:
    at: float
    seq: int
    body: str = field(compare=False)


@dataclass
class _Sim:
    """The virtual clock, the queue of messages by due time, and what happened."""

    now: float
    due: list[_Due] = field(default_factory=list)
    seq: Iterator[int] = field(default_factory=itertools.count)
    sqs_calls: int = 0
    claims: int = 0
    starts: dict[str, float] = field(default_factory=dict)
    wall_starts: dict[str, float] = field(default_factory=dict)  # time.monotonic(), outside the simulation

    def send(self, body: str, delay: float, reserved_start: float | None = None) -> None:
        self.sqs_calls += 1
        at = max(self.now + delay, reserved_start or 0.0)
        heapq.heappush(self.due, _Due(at, next(self.seq), body))


_sim: _Sim | None = None
_idle_from = 0.0  # the virtual time the last run ended
_IDLE_GAP_SECONDS = 120


def _run(_payload: _Empty, context: JobContext) -> None:
    assert _sim is not None
    _sim.starts[context.job_id] = _sim.now


_wall_starts: dict[str, float] = {}


def _run_free(_payload: _Empty, context: JobContext) -> None:
    _wall_starts[context.job_id] = time.monotonic()


@contextmanager
def _simulated(start: float) -> Iterator[_Sim]:
    """SQS and the clock as the simulation's: the production classes' own methods patched for the run."""
    global _sim
    from lambdas.store.jobs import JobStore
    from lambdas.store.limits import LimitStore
    from lambdas.store.queue import JobQueue, job_message

    sim = _Sim(start)
    claim = JobStore.claim_attempt

    def claim_attempt(self: JobStore, job_id: str, lease_seconds: int) -> Any:
        sim.claims += 1
        return claim(self, job_id, lease_seconds)

    def advance(_self: Any, seconds: float) -> None:
        sim.now += max(seconds, 0)

    def send_job(_self: Any, job: Any, delay_seconds: int = 0, wait: Any = None) -> None:
        reserved = wait.until if wait is not None and wait.reserved else None
        body = job_message(job.job_id, job.job_type, job.owner, wait, priority=job.priority)
        sim.send(body, delay_seconds, reserved)

    def sqs_call(_self: Any, *_args: Any, **_kwargs: Any) -> None:
        sim.sqs_calls += 1

    patches: dict[tuple[type, str], Any] = {
        (JobStore, "now"): lambda _self: sim.now,
        (LimitStore, "now"): lambda _self: sim.now,
        (LimitStore, "sleep"): advance,
        (JobQueue, "send_job"): send_job,
        (JobQueue, "change_visibility"): sqs_call,
        (JobQueue, "forward"): sqs_call,
        (JobStore, "claim_attempt"): claim_attempt,
    }
    saved = {target: getattr(*target) for target in patches}
    for (cls, name), replacement in patches.items():
        setattr(cls, name, replacement)
    _sim = sim
    try:
        yield sim
    finally:
        _sim = None
        for (cls, name), original in saved.items():
            setattr(cls, name, original)


@dataclass
class _Outcome:
    seconds: float
    claims: int
    calls: int
    busiest: int
    hurt: int
    beta_done_with_alpha_waiting: int | None = None
    high_after: float | None = None


def _burst(owners: list[tuple[str, int]], high: str | None = None) -> _Outcome:
    """Submit the jobs (owner by owner, in order; then one `high` job of owner `high`), then deliver
    every message when due until none is left; the figures of the run."""
    from lambdas.handlers import worker as handler
    from lambdas.lifecycle.attempt.worker import QueueMessage
    from lambdas.models import settings

    settings.reset()
    handler._worker.cache_clear()
    worker = handler._worker()
    store = worker._store
    global _idle_from
    # Each run starts on an idle limit: after the virtual time the run before it reached (its reserved
    # starts and its bucket lie in that future), and after its lanes went stale.
    with _simulated(max(time.time(), _idle_from + _IDLE_GAP_SECONDS)) as sim, counting_calls() as log:
        started = sim.now
        ids: dict[str, list[str]] = {}
        for owner, count in owners:
            for _ in range(count):
                job = store.put_new(NewJob(str(uuid.uuid4()), NAME, {}, max_attempts=3, owner=owner))
                worker._queue.send_job(job)
                ids.setdefault(owner, []).append(job.job_id)
        if high is not None:
            job = store.put_new(NewJob(str(uuid.uuid4()), NAME, {}, 3, owner=high, priority=Priority.HIGH))
            worker._queue.send_job(job)
            ids["high"] = [job.job_id]
        beta_done_at: float | None = None
        while sim.due:
            message = heapq.heappop(sim.due)
            sim.now = message.at  # each message's own time: its wait in the worker delays no other
            worker.process(QueueMessage(str(message.seq), "-", message.body), lambda: 60_000)
            if beta_done_at is None and "beta" in ids and all(j in sim.starts for j in ids["beta"]):
                beta_done_at = sim.now
        calls = sum(log.calls.values()) + sim.sqs_calls
        _idle_from = sim.now
    every = [j for owner_ids in ids.values() for j in owner_ids]
    jobs = [store.get(j) for j in every]
    hurt = sum(1 for j in jobs if j is None or j.status.value != "done" or j.attempts != 1)
    starts = sorted(sim.starts.values())
    busiest = max(sum(1 for t in starts[i:] if t < first + 1) for i, first in enumerate(starts))
    alpha_waiting = None
    if beta_done_at is not None:
        alpha_waiting = sum(1 for j in ids["alpha"] if sim.starts.get(j, float("inf")) > beta_done_at)
    high_after = sim.starts[ids["high"][0]] - started if high is not None else None
    return _Outcome(max(starts) - started, sim.claims, calls, busiest, hurt, alpha_waiting, high_after)


def _high_behind_backlog(provisioned: Any) -> tuple[float, int]:
    """Seconds from a `high` job's submission to its start behind BACKLOG unlimited jobs, and how many
    of those were still queued then (see the module docstring)."""
    from lambdas.handlers import worker as handler
    from lambdas.lifecycle.requests.submit import submit
    from lambdas.models import settings
    from lambdas.models.api import SubmitJobRequest
    from lambdas.models.caller import Caller
    from local_runtime.esm import SqsEventSource
    from local_runtime.lambda_pool import Invocation

    settings.reset()
    handler._worker.cache_clear()
    worker = handler._worker()
    store, queue = worker._store, worker._queue
    owner = Caller(owner="alpha")
    ids = [
        store.put_new(NewJob(str(uuid.uuid4()), FREE, {}, 3, owner="alpha")).job_id for _ in range(BACKLOG)
    ]
    assert not queue.send_new(FREE, "alpha", ids)
    worker_function = provisioned.function("lambdas.handlers.worker.handler").logical_id
    mappings = [m for m in provisioned.event_source_mappings if m.function == worker_function]

    def invoke(event: dict[str, Any]) -> Invocation:
        result = handler.handler(event, LambdaContext(function_name="worker", timeout_seconds=360))
        return Invocation(request_id=str(uuid.uuid4()), ok=True, result=result)

    sources = [SqsEventSource(m, "worker", boto3.client("sqs"), invoke, "us-east-1") for m in mappings]
    for source in sources:
        source.start()
    try:
        working = time.monotonic() + 60
        while not any(j in _wall_starts for j in ids) and time.monotonic() < working:
            time.sleep(0.05)  # the backlog is being worked on
        submitted = time.monotonic()
        job = submit(SubmitJobRequest(type=FREE, payload={}, priority=Priority.HIGH), store, queue, owner).job
        deadline = submitted + 60
        while job.job_id not in _wall_starts and time.monotonic() < deadline:
            time.sleep(0.05)
        started = _wall_starts.get(job.job_id, float("inf"))
        waiting = BACKLOG - sum(1 for j in ids if j in _wall_starts)
    finally:
        for source in sources:
            source.request_stop()
        for source in sources:
            source.stop(10)
    return started - submitted, waiting


def measure() -> list[Figure]:
    with in_process_moto() as env:
        os.environ.update(env)
        os.environ[config.ENV_JOB_LIMITS] = json.dumps({NAME: {"perSecond": RATE}})
        quiet()
        if NAME not in registry.names():
            registry.register(JobType(NAME, _Empty, _run))
        if FREE not in registry.names():
            registry.register(JobType(FREE, _Empty, _run_free))
        figures: list[Figure] = []
        for n in BURSTS:
            out = _burst([("alpha", n)])
            ideal = n / RATE
            figures += [
                Figure(
                    f"claims per job, burst of {n} at {RATE}/s",
                    out.claims / n,
                    CLAIMS_PER_JOB,
                    f"{out.claims} claims",
                    unit="",
                ),
                Figure(
                    f"time to all done over n/rate, burst of {n}",
                    out.seconds / ideal,
                    TIME_RATIO,
                    f"{out.seconds:.1f} s (virtual) against {ideal:.1f} s",
                    unit="",
                ),
                Figure(
                    f"AWS calls per job, burst of {n}",
                    out.calls / n,
                    CALLS_PER_JOB,
                    f"{out.calls} calls",
                    unit=" calls",
                ),
                Figure(
                    f"starts in any 1 s window, burst of {n}",
                    out.busiest,
                    RATE + 1,
                    f"{n - out.hurt} of {n} done on their first attempt",
                    unit="",
                ),
                Figure(
                    f"jobs hurt by waiting, burst of {n}",
                    out.hurt,
                    0,
                    "dead or more than one attempt",
                    unit="",
                ),
            ]
        fair = _burst([("alpha", ALPHA), ("beta", BETA)])
        figures.append(
            Figure(
                "alpha's jobs waiting when beta's are done",
                fair.beta_done_with_alpha_waiting or 0,
                150,
                f"alpha {ALPHA} then beta {BETA}, one {RATE}/s limit",
                at_least=True,
                unit="",
            )
        )
        jumped = _burst([("alpha", BEHIND_LIMITED)], high="alpha")
        figures.append(
            Figure(
                f"high job's start behind its owner's {BEHIND_LIMITED} waiting jobs",
                jumped.high_after or 0.0,
                HIGH_LIMITED_SECONDS,
                f"one {RATE}/s limit; virtual time (simulation)",
                unit=" s",
            )
        )
    return figures + measure_backlog()


def measure_backlog() -> list[Figure]:
    """The high queue's figure, on its own moto: it runs the mappings in threads, in wall time."""
    with in_process_stack() as provisioned:
        os.environ.update(provisioned.function_env("lambdas.handlers.worker.handler"))
        quiet()
        if FREE not in registry.names():
            registry.register(JobType(FREE, _Empty, _run_free))
        seconds, waiting = _high_behind_backlog(provisioned)
        return [
            Figure(
                f"high job's start behind {BACKLOG} unlimited jobs",
                seconds,
                HIGH_BACKLOG_SECONDS,
                f"{waiting} of {BACKLOG} still queued then; wall time, both mappings on in-process moto",
                unit=" s",
            )
        ]
