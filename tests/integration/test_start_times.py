"""Jobs that start later: `runAt` and `delaySeconds` up to a year, the `scheduled` state, its hand-over to
SQS, rescheduling and cancelling (lambdas/lifecycle/sweeps/start_times.py)."""

from datetime import UTC, datetime
from typing import Any

import pytest

from lambdas import config
from lambdas.models.job import JobStatus
from lambdas.store.errors import JobMovedError
from lambdas.store.queue import JobQueue, Routed, Wait
from tests.support.pipeline import Pipeline
from tests.support.stores import Clock, store_from_env
from tests.support.transitions import Lines, transitions

pytestmark = pytest.mark.usefixtures("test_types")

HORIZON = config.SCHEDULE_HORIZON_SECONDS


def at(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every (job id, DelaySeconds) sent on the main queue; the messages still go to SQS."""
    calls: list[tuple[str, int]] = []
    original = JobQueue.send_job

    def send(self: JobQueue, job: Routed, delay_seconds: int = 0, wait: Wait | None = None) -> None:
        calls.append((job.job_id, delay_seconds))
        original(self, job, delay_seconds, wait)

    monkeypatch.setattr(JobQueue, "send_job", send)
    return calls


def grace_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recovery takes a pending job as lost the moment it is overdue (the harshest sweep)."""
    from lambdas.handlers import recovery
    from lambdas.models import settings

    monkeypatch.setenv(config.ENV_RECOVERY_GRACE_SECONDS, "0")
    settings.reset()
    recovery._sweeper.cache_clear()


def test_a_job_due_beyond_the_horizon_is_scheduled_and_sends_no_message(
    pipeline: Pipeline, clock: Clock, sent: list[Any]
) -> None:
    """Seen failing when codec.new_item wrote every job `pending` (status pending, a message sent)."""
    run_at = clock() + 7200
    job_id = pipeline.submit("test_echo", {"value": "one"}, runAt=at(run_at))

    job = pipeline.job(job_id)
    assert job["status"] == "scheduled"
    assert job["nextAttemptAt"] == job["runAt"]
    assert datetime.fromisoformat(job["runAt"]).timestamp() == pytest.approx(run_at, abs=0.001)
    assert sent == []
    assert pipeline.receive(pipeline.queue_url) == []


def test_a_year_of_delay_is_accepted_and_more_is_refused(pipeline: Pipeline, clock: Clock) -> None:
    """Seen failing against the old bound (delaySeconds up to 900) and without the year check of runAt."""
    year = config.MAX_SCHEDULE_AHEAD_SECONDS
    assert pipeline.job(pipeline.submit("test_echo", {}, delaySeconds=year))["status"] == "scheduled"
    late = pipeline.request(
        "POST", "/jobs", {"type": "test_echo", "payload": {}, "runAt": at(clock() + year + 60)}
    )
    assert (late.status, late.body["error"]["code"]) == (400, "invalid_start_time")
    both = {"type": "test_echo", "payload": {}, "runAt": at(clock() + 60), "delaySeconds": 5}
    assert pipeline.request("POST", "/jobs", both).status == 400
    naive = {"type": "test_echo", "payload": {}, "runAt": "2030-01-01T00:00:00"}
    assert pipeline.request("POST", "/jobs", naive).body["error"]["code"] == "invalid_request"


def test_a_delay_within_the_horizon_is_a_pending_job_sent_with_that_delay(
    pipeline: Pipeline, clock: Clock, sent: list[Any]
) -> None:
    job_id = pipeline.submit("test_echo", {}, runAt=at(clock() + 300))
    assert pipeline.job(job_id)["status"] == "pending"
    assert sent == [(job_id, 300)]


def test_the_sweep_hands_a_scheduled_job_to_sqs_with_the_delay_left_and_never_as_lost(
    pipeline: Pipeline, clock: Clock, sent: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen failing without hand_over_due in the sweep (the job stayed scheduled), and with the lost
    pass reading `scheduled` too (requeuedPending 1, sent with no delay)."""
    grace_zero(monkeypatch)
    run_at = clock() + 3 * HORIZON
    job_id = pipeline.submit("test_echo", {"value": "later"}, runAt=at(run_at))

    clock.advance(HORIZON)  # still more than the horizon ahead
    report = pipeline.run_recovery()
    assert (report["handedOver"], report["requeuedPending"]) == (0, 0)
    assert pipeline.job(job_id)["status"] == "scheduled"

    clock.advance(HORIZON + 100)  # 800 s to go
    report = pipeline.run_recovery()
    assert (report["handedOver"], report["requeuedPending"]) == (1, 0)
    assert sent == [(job_id, 800)]
    assert pipeline.job(job_id)["status"] == "pending"
    assert pipeline.run_recovery()["handedOver"] == 0  # once


def test_an_early_message_cannot_start_a_job_rescheduled_later(
    pipeline: Pipeline, clock: Clock, sent: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen failing when the claim's runAt condition was removed (the old message ran the job at once),
    and when `Worker._not_claimed`'s `job.run_at / 1000` was `* 1000` (the old message hidden for SQS's
    12 hours, not until the job is due; sample 581628's `xǁWorkerǁ_not_claimed__mutmut_28`)."""
    hidden: list[int] = []
    change_visibility = JobQueue.change_visibility

    def note(self: JobQueue, receipt_handle: str, seconds: int, source_arn: str = "") -> None:
        hidden.append(seconds)
        change_visibility(self, receipt_handle, seconds, source_arn)

    monkeypatch.setattr(JobQueue, "change_visibility", note)
    job_id = pipeline.submit(
        "test_echo", {"value": "one"}, runAt=at(clock())
    )  # due now: its message is visible
    moved = pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 600)})
    assert moved.status == 200, moved.body
    assert moved.body["status"] == "pending"
    assert sent[-1] == (job_id, 600)

    records = pipeline.receive(pipeline.queue_url)
    assert len(records) == 1  # the old message; the new one is delayed
    assert pipeline.run_worker(records)["batchItemFailures"]  # kept, to come back when the job is due
    assert hidden == [600]
    assert pipeline.job(job_id)["status"] == "pending"

    clock.advance(601)
    pipeline.make_visible(records)
    pipeline.run_worker()
    assert pipeline.job(job_id)["status"] == "done"


def test_reschedule_moves_a_scheduled_job_near_and_it_runs(
    pipeline: Pipeline, clock: Clock, sent: list[Any]
) -> None:
    """Seen failing when move_start kept the status (the job stayed scheduled, no message sent)."""
    job_id = pipeline.submit("test_echo", {"value": "two"}, runAt=at(clock() + 86_400))
    moved = pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 2)})
    assert (moved.status, moved.body["status"]) == (200, "pending")
    assert sent == [(job_id, 2)]
    far = pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 86_400)})
    assert far.body["status"] == "scheduled"


def test_a_reschedule_that_moves_a_job_across_the_horizon_logs_each_state_change(
    pipeline: Pipeline, clock: Clock, log_lines: Lines
) -> None:
    """Seen to fail against `reschedule_job`'s `log_transition(...)` with the from-state `None`
    (sample 581628's `x_reschedule_job__mutmut_44`)."""
    job_id = pipeline.submit("test_echo", {"value": "two"}, runAt=at(clock() + 86_400))
    pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 2)})
    pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 3)})  # no change of state
    pipeline.request("POST", f"/jobs/{job_id}/reschedule", {"runAt": at(clock() + 86_400)})

    assert transitions(log_lines(), job_id)[1:] == [
        (f"job {job_id} scheduled -> pending", "test_echo", "scheduled", "pending", 0, "rescheduled"),
        (f"job {job_id} pending -> scheduled", "test_echo", "pending", "scheduled", 0, "rescheduled"),
    ]


def test_reschedule_is_refused_for_a_started_job_and_another_clients_job(
    pipeline: Pipeline, clock: Clock
) -> None:
    started = pipeline.submit("test_echo", {})
    pipeline.run_worker()
    done = pipeline.request("POST", f"/jobs/{started}/reschedule", {"runAt": at(clock() + 60)})
    assert (done.status, done.body["error"]["code"]) == (409, "not_reschedulable")
    mine = pipeline.submit("test_echo", {}, delaySeconds=5000)
    other = pipeline.request(
        "POST", f"/jobs/{mine}/reschedule", {"runAt": at(clock() + 60)}, api_key_id="other"
    )
    assert other.status == 404


def test_a_hand_over_and_a_reschedule_that_race_never_both_take_effect(
    pipeline: Pipeline, clock: Clock
) -> None:
    """Seen failing when move_start's condition was `#status = :seen` alone (the stale move overwrote the
    hand-over's state) and when hand_over did not check runAt."""
    store = store_from_env(pipeline.env)
    job_id = pipeline.submit("test_echo", {}, delaySeconds=5000)
    seen = store.get(job_id)
    assert seen is not None
    assert seen.status is JobStatus.SCHEDULED

    moved = store.move_start(seen, clock() + 9000, HORIZON)  # a caller moves it first
    assert store.hand_over(seen) is None  # the sweep's read was stale
    with pytest.raises(JobMovedError):
        store.move_start(seen, clock() + 100, HORIZON)  # a second caller's read was stale too
    assert store.hand_over(moved) is not None
    with pytest.raises(JobMovedError):
        store.move_start(moved, clock() + 100, HORIZON)  # handed over after this read
    assert store.get(job_id).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_a_cancelled_scheduled_job_is_never_handed_over(
    pipeline: Pipeline, clock: Clock, sent: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen failing when cancel_job took only pending jobs (409 not_cancellable)."""
    grace_zero(monkeypatch)
    job_id = pipeline.submit("test_echo", {}, delaySeconds=2 * HORIZON)
    cancelled = pipeline.request("POST", f"/jobs/{job_id}/cancel")
    assert (cancelled.status, cancelled.body["status"]) == (200, "cancelled")
    clock.advance(3 * HORIZON)
    assert pipeline.run_recovery()["handedOver"] == 0
    assert sent == []
    assert pipeline.job(job_id)["status"] == "cancelled"
