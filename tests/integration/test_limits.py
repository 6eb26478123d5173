"""Flow control: limits per job type, and waiting that spends no attempt and never reaches the DLQ.

The limit store's rules are driven on the limits table the template declares (moto in-process), time
moved by the `clock` fixture. The worker's rules go through the pipeline: a job over its limit, or one
that raises RetryLater, stays `pending`, says why in `waitingFor`, and waits in a fresh message (its
receive count starts again at 1, so SQS never redrives it). Delayed messages become visible when a
test says time has passed (`_delays_pass`, moto's own delay clock set back).
"""

import heapq
import itertools
import json
from typing import Any

import boto3
import pytest
from moto.core.utils import unix_time_millis
from moto.sqs.models import sqs_backends
from pydantic import BaseModel, ConfigDict

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import JobContext, JobType, RetryLater
from lambdas.models.job import Priority
from lambdas.models.limits import Limit, LimitKind
from lambdas.store.limits import Admitted, LimitStore, Refused
from tests.support.pipeline import Pipeline
from tests.support.replicas import replicas_lag
from tests.support.stores import Clock

LEASE = 60


@pytest.fixture
def limits(pipeline: Pipeline, clock: Clock) -> LimitStore:
    return LimitStore(pipeline.env[config.ENV_LIMITS_TABLE])


def _acquire(
    store: LimitStore, limit: Limit, job: str, attempt: int = 1, key: str = "*", reserved: bool = False
) -> Admitted | Refused:
    return store.acquire("t", key, limit, job, attempt, LEASE, reserved=reserved)


# --- the limit store ---------------------------------------------------------------------------------


def test_concurrency_admits_up_to_its_slots_and_a_release_frees_one(limits: LimitStore) -> None:
    """Seen to fail with `size(holders) < :n` as `<=` in `_fast_acquire` (a third job ran)."""
    limit = Limit(concurrency=2)
    assert isinstance(_acquire(limits, limit, "a"), Admitted)
    assert isinstance(_acquire(limits, limit, "b"), Admitted)
    refused = _acquire(limits, limit, "c")
    assert isinstance(refused, Refused)
    assert (refused.kind, refused.reserved) == (LimitKind.CONCURRENCY, True)
    # a start of its own, chosen from the item: never past the earliest lease expiry, never now
    assert limits.now() < refused.until <= limits.now() + LEASE
    assert limits.release("t", "*", "a", 1, ran_ms=10)
    assert isinstance(_acquire(limits, limit, "c", reserved=True), Admitted)
    assert [s.running for s in limits.states("t", limit)] == [2]


def test_a_crashed_holders_slot_comes_back_when_its_lease_expires(limits: LimitStore, clock: Clock) -> None:
    """Seen to fail with `_refusal`'s `if j != job_id and float(h["x"]) > now_ms` as `if j != job_id`
    (the dead holder kept its slot for ever)."""
    limit = Limit(concurrency=1)
    assert isinstance(_acquire(limits, limit, "crashed"), Admitted)
    assert isinstance(_acquire(limits, limit, "next"), Refused)
    clock.advance(LEASE + 1)
    assert isinstance(_acquire(limits, limit, "next"), Admitted)
    assert [s.running for s in limits.states("t", limit)] == [1]


def test_a_stale_attempt_cannot_release_the_slot_of_a_newer_attempt(limits: LimitStore, clock: Clock) -> None:
    """Seen to fail with `release`'s condition `holders.#j.a = :attempt` as `attribute_exists(holders.#j)`."""
    limit = Limit(concurrency=1)
    assert isinstance(_acquire(limits, limit, "job", attempt=1), Admitted)
    clock.advance(LEASE + 1)  # attempt 1's worker is gone; attempt 2 of the same job takes the slot over
    assert isinstance(_acquire(limits, limit, "job", attempt=2), Admitted)
    assert limits.release("t", "*", "job", 1, ran_ms=5) is False  # attempt 1 comes back late
    assert isinstance(_acquire(limits, limit, "other"), Refused)  # attempt 2 still holds it
    assert limits.release("t", "*", "job", 2, ran_ms=5) is True
    assert isinstance(_acquire(limits, limit, "other", reserved=True), Admitted)


def test_per_second_allows_its_burst_then_one_start_per_interval(limits: LimitStore, clock: Clock) -> None:
    """Over 3 simulated seconds of a new job every 10 ms, each refused job coming back at the start
    reserved for it: starts in any 1 s window never exceed perSecond + burst. Seen to fail with the busy
    case's `tat <= :allow` as `tat <= :allow + :t` (a fourth start at once)."""
    limit = Limit(per_second=5, burst=3)
    started: list[float] = []
    due: list[tuple[float, str]] = []
    for step in range(300):
        for until, job in [d for d in due if d[0] <= clock()]:
            due.remove((until, job))
            answer = _acquire(limits, limit, job, reserved=True)
            if isinstance(answer, Admitted):
                started.append(clock())
            else:
                due.append((answer.until, job))
        answer = _acquire(limits, limit, f"j{step}")
        if isinstance(answer, Admitted):
            started.append(clock())
        else:
            due.append((answer.until, f"j{step}"))
        clock.advance(0.01)
    assert len(started) >= 3 + 5 * 2  # the burst, then perSecond
    for first in started:
        assert sum(1 for t in started if first <= t < first + 1) <= 5 + 3


def test_a_refused_job_is_handed_a_start_of_its_own_so_a_backlog_comes_back_one_at_a_time(
    limits: LimitStore, clock: Clock
) -> None:
    """A burst of 100 under perSecond 10: each refused job gets a reserved start 0.1 s after the one
    before (not the next refill, which every waiter would race for), and each is admitted when it comes
    back then: two acquires per job at most. Seen to fail with `_reserve`'s `step = ...` as `step = 0`
    (every job reserved the same start), and with the fast path's `line <= :now` condition dropped (new
    jobs took the reserved jobs' starts: j1 was refused when it came back)."""
    limit = Limit(per_second=10)
    reserved = {}
    for i in range(100):
        answer = _acquire(limits, limit, f"j{i}")
        if isinstance(answer, Refused):
            assert answer.reserved
            reserved[f"j{i}"] = answer.until
    starts = sorted(reserved.values())
    assert len(starts) == 99
    assert all(round(b - a, 2) == 0.1 for a, b in itertools.pairwise(starts))
    acquires = 0
    for job, until in sorted(reserved.items(), key=lambda item: item[1]):
        clock.now = max(clock.now, until)
        _acquire(limits, limit, f"late-{job}")  # a new job arriving meanwhile takes no reserved start
        acquires += 1
        assert isinstance(_acquire(limits, limit, job, reserved=True), Admitted), job
    assert acquires == 99


def test_waiters_of_one_key_are_served_round_robin_across_owners(limits: LimitStore, clock: Clock) -> None:
    """Alpha's 40 jobs are refused and reserved first, then beta's 4: beta's starts interleave with
    alpha's from the next one on (every other start while both wait), not after alpha's 40. Seen to fail
    with `_reserve`'s `lane = lane or _NO_LANE` as `lane = _NO_LANE` (one lane for every owner: beta's
    first start after alpha's last)."""
    limit = Limit(per_second=10)
    assert isinstance(limits.acquire("t", "*", limit, "first", 1, LEASE, lane="alpha"), Admitted)
    alpha = [limits.acquire("t", "*", limit, f"a{i}", 1, LEASE, lane="alpha") for i in range(40)]
    beta = [limits.acquire("t", "*", limit, f"b{i}", 1, LEASE, lane="beta") for i in range(4)]
    assert all(isinstance(r, Refused) and r.reserved for r in alpha + beta)
    alpha_starts = sorted(r.until for r in alpha if isinstance(r, Refused))
    beta_starts = sorted(r.until for r in beta if isinstance(r, Refused))
    assert beta_starts[-1] - clock() <= 1.0  # beta's 4 within a second, 2 intervals apart
    assert sum(1 for t in alpha_starts if t < beta_starts[-1]) <= 10  # alpha's 40 do not go first


def test_within_an_owners_share_a_high_job_starts_before_the_owners_waiting_normal_jobs(
    limits: LimitStore, clock: Clock
) -> None:
    """Alpha's 30 normal jobs wait under perSecond 10, then alpha submits a high job: it is handed the
    lane's next start (not one after the 30), and the normal job whose start it took yields it when it
    comes back (reserved again at the lane's end), so alpha still takes one start per interval. Seen to
    fail with `_reserve`'s `jumps = mark_name is not None and seen > max(mark, floor)` as `jumps = False`
    (the high job's start came after the 30 normal ones')."""
    limit = Limit(per_second=10)
    assert isinstance(limits.acquire("t", "*", limit, "first", 1, LEASE, lane="alpha"), Admitted)
    normal = {f"n{i}": limits.acquire("t", "*", limit, f"n{i}", 1, LEASE, lane="alpha") for i in range(30)}
    high = limits.acquire("t", "*", limit, "h", 1, LEASE, lane="alpha", priority=Priority.HIGH)
    assert isinstance(high, Refused)
    assert high.reserved
    assert all(isinstance(r, Refused) and r.reserved for r in normal.values())
    starts = {job: r.until for job, r in normal.items() if isinstance(r, Refused)}
    assert high.until - clock() <= 0.2  # within alpha's next two starts, not 3 s away behind the 30
    # Each comes back at its start; the first normal job to come back after the high one yields.
    clock.now = high.until
    assert isinstance(
        limits.acquire("t", "*", limit, "h", 1, LEASE, lane="alpha", reserved=True, priority=Priority.HIGH),
        Admitted,
    )
    first = min(starts, key=lambda job: starts[job])
    clock.now = max(clock.now, starts[first])
    yielded = limits.acquire("t", "*", limit, first, 1, LEASE, lane="alpha", reserved=True)
    assert isinstance(yielded, Refused)
    assert yielded.reserved
    assert yielded.until > max(starts.values())  # reserved again at the lane's end
    second = sorted(starts, key=lambda job: starts[job])[1]
    clock.now = max(clock.now, starts[second])
    assert isinstance(
        limits.acquire("t", "*", limit, second, 1, LEASE, lane="alpha", reserved=True), Admitted
    )


def test_one_owners_waiting_jobs_start_high_then_normal_then_low_whatever_order_they_came_in(
    limits: LimitStore, clock: Clock
) -> None:
    """Alpha's 8 low jobs wait, then 8 normal, then 3 high (perSecond 10); each comes back at the start
    it was handed (again when it yields): every high starts before any normal, every normal before any
    low, the highs in the order they came, in two acquires per job and a yield per job jumped. Seen to
    fail with `_reserve`'s `jumps = mark_name is not None and seen > max(mark, floor)`
    as `jumps = False` (the lows, refused first, started first)."""
    limit = Limit(per_second=10)
    assert isinstance(limits.acquire("t", "*", limit, "first", 1, LEASE, lane="alpha"), Admitted)
    came = [(f"l{i}", Priority.LOW) for i in range(8)] + [(f"n{i}", Priority.NORMAL) for i in range(8)]
    came += [(f"h{i}", Priority.HIGH) for i in range(3)]
    due: list[tuple[float, int, str, Priority]] = []
    for seq, (job, priority) in enumerate(came):
        refused = limits.acquire("t", "*", limit, job, 1, LEASE, lane="alpha", priority=priority)
        assert isinstance(refused, Refused)
        assert refused.reserved
        heapq.heappush(due, (refused.until, seq, job, priority))
    started: list[str] = []
    acquires = len(came)
    while due and acquires < 4 * len(came):
        until, seq, job, priority = heapq.heappop(due)
        clock.now = max(clock.now, until)
        answer = limits.acquire(
            "t", "*", limit, job, 1, LEASE, lane="alpha", reserved=True, priority=priority
        )
        acquires += 1
        if isinstance(answer, Admitted):
            started.append(job)
        else:
            heapq.heappush(due, (answer.until, seq, job, priority))
    assert sorted(started) == sorted(job for job, _ in came)
    assert [job[0] for job in started] == ["h"] * 3 + ["n"] * 8 + ["l"] * 8, started
    assert started[:3] == ["h0", "h1", "h2"]
    # One yield per normal job that jumped the lows, two per high one (the normal job that yields to it
    # jumps the lows again): linear in the jobs, never in the backlog's length.
    assert acquires <= 2 * len(came) + 2 * 3 + 8


def test_concurrent_workers_never_hold_more_slots_than_the_limit(limits: LimitStore) -> None:
    """Eight threads start, hold and release jobs under `concurrency` 3, with reservations and their
    returns racing: no holder ever sees more than 3 slots held (a consistent read of the key while it
    holds its own). Seen to fail with the fast path's `size(holders) < :n` as `size(holders) <= :n`
    (a fourth held one)."""
    import threading

    limit = Limit(concurrency=3)
    lock = threading.Lock()
    most = 0

    def work(worker: int) -> None:
        nonlocal most
        for i in range(15):
            job, reserved = f"w{worker}-{i}", False
            for _ in range(200):
                answer = limits.acquire(
                    "c", "*", limit, job, i, LEASE, lane=f"o{worker % 2}", reserved=reserved
                )
                if isinstance(answer, Admitted):
                    break
                reserved = answer.reserved or reserved
            else:
                continue
            (state,) = limits.states("c", limit)
            with lock:
                most = max(most, state.running)
            assert limits.release("c", "*", job, i, ran_ms=1)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= most <= 3


def test_a_key_expires_seven_days_after_its_last_use(
    pipeline: Pipeline, limits: LimitStore, clock: Clock
) -> None:
    """Each start moves the item's TTL (the table's `expiresAt`) to seven days on, so a key nobody uses
    is removed. Seen to fail with the fast path's `":exp": self._expires(now_ms)` as `int(now_ms / 1000)`."""
    limit = Limit(concurrency=5)
    _acquire(limits, limit, "a")  # the key's first use: its PutItem
    clock.advance(3600)
    assert isinstance(_acquire(limits, limit, "b"), Admitted)  # a later start: the one UpdateItem
    item = boto3.client("dynamodb").get_item(
        TableName=pipeline.env[config.ENV_LIMITS_TABLE], Key={"limit": {"S": "t"}, "key": {"S": "*"}}
    )["Item"]
    assert int(item["expiresAt"]["N"]) == int(clock()) + 7 * 24 * 3600


def test_a_paced_keys_state_shows_the_starts_left_in_its_bucket(limits: LimitStore, clock: Clock) -> None:
    """GET /limits' `tokens`: two of a bucket of three taken at once leave one; a quiet spell refills it
    to the bucket and no further. Seen to fail (a TypeError) against `_state_of`'s
    `min(float(limit.bucket), ...)` without the bucket and with `float(None)` for it (sample 581628's
    `x__state_of__mutmut_36` and `_38`)."""
    limit = Limit(per_second=5, burst=3)
    assert isinstance(_acquire(limits, limit, "a"), Admitted)
    assert isinstance(_acquire(limits, limit, "b"), Admitted)
    assert [s.tokens for s in limits.states("t", limit)] == [1.0]
    clock.advance(100)
    assert [s.tokens for s in limits.states("t", limit)] == [3.0]


def test_a_keys_state_read_right_after_a_start_sees_it_though_replicas_lag(
    pipeline: Pipeline, limits: LimitStore
) -> None:
    """An eventually consistent Query may miss a write that just completed (DynamoDB's documented
    model); moto's never lag, so here a Query of the limits table that does not ask for consistency
    finds nothing. Seen to fail (no key listed) against `LimitStore.states`' `consistent=True` as
    `None` (sample 581628's `xǁLimitStoreǁstates__mutmut_7`)."""
    limit = Limit(concurrency=2)
    assert isinstance(_acquire(limits, limit, "a"), Admitted)
    with replicas_lag(pipeline.env[config.ENV_LIMITS_TABLE], "Query"):
        listed = [s.running for s in limits.states("t", limit)]
    assert listed == [1]


def test_keys_are_separate_limits(limits: LimitStore) -> None:
    limit = Limit(concurrency=1, key="owner")
    assert isinstance(_acquire(limits, limit, "a", key="alpha"), Admitted)
    assert isinstance(_acquire(limits, limit, "b", key="beta"), Admitted)
    assert isinstance(_acquire(limits, limit, "c", key="alpha"), Refused)


def test_a_pause_holds_the_starts_it_names_until_it_ends_and_no_others(
    limits: LimitStore, clock: Clock
) -> None:
    """A receiver's pause holds the jobs it answers for (one client's deliveries to one URL), not the
    key's others. Seen to fail with the fast path's `#p <= :now` as `#p >= :now` (the paused job
    started)."""
    limit = Limit(concurrency=10, key="host")
    assert isinstance(_acquire(limits, limit, "a", key="h:1"), Admitted)
    limits.pause("t", "h:1", "alpha-url", clock() + 30)

    def acquire(job: str, pause: str, key: str = "h:1") -> Admitted | Refused:
        return limits.acquire("t", key, limit, job, 1, LEASE, pause=pause, reserve=False)

    refused = acquire("b", "alpha-url")
    assert isinstance(refused, Refused)
    assert refused.kind is LimitKind.PAUSED
    assert refused.until == pytest.approx(clock() + 30, abs=0.01)
    assert isinstance(acquire("c", "beta-url"), Admitted)  # another client's (or URL's) jobs run on
    assert isinstance(acquire("d", "alpha-url", key="h:2"), Admitted)  # another host is not paused
    clock.advance(31)
    assert isinstance(acquire("b", "alpha-url"), Admitted)


# --- the worker: waiting spends no attempt and never redrives ---------------------------------------


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer: str = "c1"
    later: float = 0
    times: int = 0


runs: list[str] = []


def _run(payload: _Payload, context: JobContext) -> dict[str, Any]:
    runs.append(context.job_id)
    if sum(1 for r in runs if r == context.job_id) <= payload.times:
        raise RetryLater(payload.later, reason="partner asked for later")
    return {"attempt": context.attempt}


@pytest.fixture
def limited(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    runs.clear()
    registry.register(
        JobType("test_limited", _Payload, _run, limits=Limit(concurrency=1, key="payload.customer"))
    )


def _delays_pass(pipeline: Pipeline) -> None:
    """Time passes for SQS: every delayed message of the main queue is due now."""
    for queue in sqs_backends["123456789012"]["us-east-1"].queues.values():
        for message in queue._messages:
            message.delayed_until = 0


def _delays(pipeline: Pipeline) -> list[int]:
    """The DelaySeconds (rounded) of each message on the main queue still delayed."""
    name = pipeline.queue_url.rsplit("/", 1)[1]
    queue = sqs_backends["123456789012"]["us-east-1"].queues[name]
    now = unix_time_millis()
    return [round((m.delayed_until - now) / 1000) for m in queue._messages if m.delayed]


# The pipeline's callers submit with this API key id: a payload key is its owner's.
OWNER = "k1e2y3i4d5"


def _hold_slot(pipeline: Pipeline, customer: str = "c1") -> None:
    LimitStore(pipeline.env[config.ENV_LIMITS_TABLE]).acquire(
        "test_limited",
        f"{OWNER}|{customer}",
        Limit(concurrency=1, key="payload.customer"),
        "someone-else",
        1,
        3600,
    )


def test_a_job_over_its_limit_waits_pending_without_spending_an_attempt(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """Seen to fail with `Worker.process`'s `if admission.refused is not None: ... return self._wait(...)`
    removed (the job ran over the limit)."""
    _hold_slot(pipeline)
    job_id = pipeline.submit("test_limited", {"customer": "c1"}, maxAttempts=2)
    for _ in range(5):  # more waits than maxAttempts
        assert pipeline.run_worker() == {"batchItemFailures": []}
        _delays_pass(pipeline)
    job = pipeline.job(job_id)
    assert runs == []
    assert (job["status"], job["attempts"]) == ("pending", 0)
    assert job["waitingFor"]["limit"] == "concurrency"
    assert job["waitingFor"]["key"] == f"{OWNER}|c1"
    assert job["waitingFor"]["retryAt"] > job["statusAt"]  # chosen from the limit's state: later, not now
    assert job["history"] == []  # it never ran


@pytest.mark.parametrize("dies_in", ["JobStore.wait", "JobQueue.send_job"])
def test_a_refused_start_spends_no_attempt_whatever_dies_when(
    pipeline: Pipeline, limited: None, clock: Clock, monkeypatch: pytest.MonkeyPatch, dies_in: str
) -> None:
    """The worker dies right after its start was refused (the job's wait write, or its fresh message,
    fails): the job was never claimed, so when its message comes back and the slot is free it runs its
    one attempt (maxAttempts 1), not `dead` for a lease that expired on an attempt that never ran. Seen
    to fail with a `self._store.claim_attempt(job_id, ...)` put before `process`'s `self._limits.admit`
    (the claim-first order: the job died, "no attempts left after 1")."""
    from lambdas.store.jobs import JobStore
    from lambdas.store.queue import JobQueue

    _hold_slot(pipeline)
    job_id = pipeline.submit("test_limited", {"customer": "c1"}, maxAttempts=1)
    owner, name = dies_in.split(".")
    cls = {"JobStore": JobStore, "JobQueue": JobQueue}[owner]
    real = getattr(cls, name)

    def dies(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("the worker died here")

    monkeypatch.setattr(cls, name, dies)
    records = pipeline.receive(pipeline.queue_url)
    assert pipeline.run_worker(records)["batchItemFailures"]  # its message stays, to come back
    monkeypatch.setattr(cls, name, real)
    assert (pipeline.job(job_id)["status"], pipeline.job(job_id)["attempts"]) == ("pending", 0)
    LimitStore(pipeline.env[config.ENV_LIMITS_TABLE]).release(
        "test_limited", f"{OWNER}|c1", "someone-else", 1, 1
    )
    clock.advance(3600)  # any lease an attempt could have taken is long over
    pipeline.make_visible(records)
    pipeline.drain()
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], runs) == ("done", 1, [job_id])


def test_however_long_a_job_waits_its_message_never_counts_towards_the_redrive(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """maxReceiveCount (15) + 5 waits: each wait is a fresh message (receive count 1), so SQS never
    moves the job to the DLQ; then the slot frees and the job runs once. Seen to fail with `_defer`
    putting the message back with ChangeMessageVisibility instead of sending a fresh one (the receive
    count rose past 1)."""
    _hold_slot(pipeline)
    job_id = pipeline.submit("test_limited", {"customer": "c1"})
    for _ in range(20):
        records = pipeline.receive(pipeline.queue_url)
        assert len(records) == 1
        assert records[0]["attributes"]["ApproximateReceiveCount"] == "1"
        pipeline.deliver(pipeline.queue_url, records, _worker(), "worker")
        _delays_pass(pipeline)
    assert pipeline.visible(pipeline.dlq_url) == 0
    LimitStore(pipeline.env[config.ENV_LIMITS_TABLE]).release(
        "test_limited", f"{OWNER}|c1", "someone-else", 1, 1
    )
    clock.advance(3600)
    pipeline.drain()
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], runs) == ("done", 1, [job_id])
    assert job.get("waitingFor") is None


def _worker() -> Any:
    from lambdas.handlers import worker

    return worker.handler


def test_retry_later_waits_without_spending_an_attempt_then_runs(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """Seen to fail with the worker's `except RetryLater` clause removed (each RetryLater spent an
    attempt, and the job died after maxAttempts)."""
    job_id = pipeline.submit("test_limited", {"customer": "c2", "later": 30, "times": 4}, maxAttempts=2)
    for _ in range(4):
        assert pipeline.run_worker() == {"batchItemFailures": []}
        assert _delays(pipeline) == [30]
        job = pipeline.job(job_id)
        assert (job["status"], job["waitingFor"]["limit"]) == ("pending", "retryLater")
        assert job["waitingFor"]["reason"] == "partner asked for later"
        clock.advance(30)
        _delays_pass(pipeline)
    pipeline.drain()
    job = pipeline.job(job_id)
    assert (job["status"], job["attempts"], len(runs)) == ("done", 1, 5)


def test_a_wait_longer_than_sqs_delays_is_a_chain_of_messages_that_does_not_run_the_job(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """An hour's wait: one message of 900 s after another; the links do not run the job. Seen to fail
    with `process`'s `... and wait.until > self._store.now() + 1` check removed (the job ran again
    after 900 s instead of an hour)."""
    job_id = pipeline.submit("test_limited", {"customer": "c3", "later": 3600, "times": 1})
    pipeline.run_worker()
    assert _delays(pipeline) == [900]
    for expected in (900, 900, 900):
        clock.advance(900)
        _delays_pass(pipeline)
        pipeline.run_worker()
        assert len(runs) == 1
        assert _delays(pipeline) == [expected]
    clock.advance(900)
    _delays_pass(pipeline)
    pipeline.drain()
    job = pipeline.job(job_id)
    assert (job["status"], len(runs)) == ("done", 2)


def test_a_job_that_waits_longer_than_the_bound_in_all_is_dead_saying_why(
    pipeline: Pipeline, limited: None, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen to fail with `_defer`'s bound check removed (the job waited on for ever)."""
    monkeypatch.setenv(config.ENV_LIMIT_MAX_WAIT_SECONDS, "100")
    from lambdas.models import settings

    settings.reset()
    job_id = pipeline.submit("test_limited", {"customer": "c4", "later": 60, "times": 5})
    pipeline.run_worker()  # waits 60 s: 60 in all
    clock.advance(60)
    _delays_pass(pipeline)
    pipeline.drain()  # a second 60 s would make 120 > 100: dead
    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert "waited 60 s in all (retryLater)" in job["lastError"]
    assert "LIMIT_MAX_WAIT_SECONDS" in job["lastError"]
    assert len(pipeline.alerts()) == 1


def test_a_job_refused_longer_than_the_bound_in_all_is_dead_saying_why(
    pipeline: Pipeline, limited: None, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused starts count towards the bound too (their waits are written without a claim). Seen to
    fail with `JobStore.wait`'s `#waitedSeconds <= :most` clause as `#waitedSeconds >= :most`
    (the job waited on for ever)."""
    monkeypatch.setenv(config.ENV_LIMIT_MAX_WAIT_SECONDS, "5")
    from lambdas.models import settings

    settings.reset()
    _hold_slot(pipeline, "c5")
    job_id = pipeline.submit("test_limited", {"customer": "c5"})
    for _ in range(10):
        pipeline.run_worker()
        clock.advance(2)
        _delays_pass(pipeline)
    job = pipeline.job(job_id)
    assert (job["status"], runs) == ("dead", [])
    assert f"s in all (concurrency {OWNER}|c5)" in job["lastError"]
    assert "LIMIT_MAX_WAIT_SECONDS" in job["lastError"]


@pytest.mark.usefixtures("test_types")
def test_every_message_carries_its_owner_as_message_group(pipeline: Pipeline) -> None:
    """Fair queues: SQS serves message groups fairly only when each message names one. Seen to fail with
    `JobQueue.send_job`'s `MessageGroupId=message_group(job.owner)` removed."""
    pipeline.submit("test_echo", {}, api_key_id="alpha-key")
    (message,) = boto3.client("sqs").receive_message(
        QueueUrl=pipeline.queue_url, MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert message["Attributes"]["MessageGroupId"] == "alpha-key"
    assert json.loads(message["Body"])


def test_get_limits_shows_the_operator_each_limit_and_its_keys_and_refuses_a_client(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """Seen to fail with `limits_report`'s `if not caller.operator:` as `if False:` (a client read every
    client's keys: 200, not 403), and with its `ForbiddenError(...)` text as `None` (the 403's message
    `None`; sample 581628's `x_limits_report__mutmut_2`)."""
    _hold_slot(pipeline, "c9")
    pipeline.submit("test_limited", {"customer": "c9"})
    pipeline.run_worker()  # refused: listed as waiting
    operator = pipeline.request("GET", "/limits", api_key_id=pipeline.env[config.ENV_OPERATOR_KEY_ID])
    assert operator.status == 200
    by_type = {limit["type"]: limit for limit in operator.body["limits"]}
    assert by_type["send_email"]["perSecond"] == config.SES_PER_SECOND
    assert (by_type["webhook_delivery"]["concurrency"], by_type["webhook_delivery"]["key"]) == (10, "host")
    assert by_type["test_limited"]["keys"] == [
        {"key": f"{OWNER}|c9", "running": 1, "tokens": None, "pausedUntil": None, "waiting": 1}
    ]
    client = pipeline.request("GET", "/limits")
    assert (client.status, client.body["error"]["code"]) == (403, "forbidden")
    assert client.body["error"]["message"] == "only the operator's key reads the limits"


PACED = """
from pydantic import BaseModel

from lambdas.jobs.base import JobType
from lambdas.models.limits import Limit


class Call(BaseModel):
    customer: str


JOB_TYPE = JobType(
    name="paced_call", payload_model=Call, run=lambda payload, context: None, limits=Limit(per_second=2)
)
"""


def test_get_limits_pages_through_every_key_as_get_jobs_does(
    pipeline: Pipeline, limited: None, clock: Clock
) -> None:
    """Five keys of one limited type, two a page: every key once, in order, then no cursor; a cursor of
    another list is a 400. Seen to fail with `limits_report`'s `limits.store.page(..., left)` as
    `limits.store.page(..., 100)` (one page of all five)."""
    store = LimitStore(pipeline.env[config.ENV_LIMITS_TABLE])
    for customer in "abcde":
        store.acquire("test_limited", f"{OWNER}|{customer}", Limit(concurrency=1), "j" + customer, 1, LEASE)
    operator = pipeline.env[config.ENV_OPERATOR_KEY_ID]
    listed: list[str] = []
    cursor = ""
    for _ in range(10):
        page = pipeline.request("GET", f"/limits?limit=2{cursor}", api_key_id=operator)
        assert page.status == 200
        keys = [
            k["key"] for view in page.body["limits"] if view["type"] == "test_limited" for k in view["keys"]
        ]
        assert sum(len(view["keys"]) for view in page.body["limits"]) <= 2
        listed += keys
        if page.body["nextCursor"] is None:
            break
        cursor = f"&cursor={page.body['nextCursor']}"
    assert listed == [f"{OWNER}|{c}" for c in "abcde"]
    wrong = pipeline.request("GET", "/limits?cursor=eyJxIjoiYSIsInMiOm51bGx9", api_key_id=operator)
    assert (wrong.status, wrong.body["error"]["code"]) == (400, "invalid_cursor")


def test_get_limits_lists_a_job_packages_type_as_the_first_request_of_an_api_process(
    pipeline: Pipeline, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm api process whose first request is GET /limits: the stack's `jobPackages` types are
    registered for it too. Seen to fail with `services.limits` registering the built-in types only
    (paced_call missing until another route had run)."""
    from lambdas.models import settings
    from tests.support.user_package import write_package

    package = write_package(tmp_path, {"paced_call": PACED})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(config.ENV_JOB_PACKAGES, package.name)
    settings.reset()
    try:
        operator = pipeline.request("GET", "/limits", api_key_id=pipeline.env[config.ENV_OPERATOR_KEY_ID])
        assert operator.status == 200, operator.body
        by_type = {limit["type"]: limit for limit in operator.body["limits"]}
        assert by_type["paced_call"]["perSecond"] == 2
    finally:
        registry.unregister("paced_call")
