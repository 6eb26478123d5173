"""Recurring schedules: the /schedules routes and the `schedules` function that fires them, under moto."""

from datetime import UTC, datetime
from typing import Any

import pytest

from lambdas.handlers import schedules as firing
from lambdas.handlers.schedules import firing_input
from local_runtime.context import LambdaContext
from tests.support.pipeline import Pipeline
from tests.support.replicas import replicas_lag
from tests.support.stores import Clock
from tests.support.transitions import Lines, transitions

pytestmark = pytest.mark.usefixtures("test_types")

OWNER = "k1e2y3i4d5"  # the client key id of tests/events/api_post_job.json


def body(**extra: Any) -> dict[str, Any]:
    return {
        "name": "nightly",
        "expression": "cron(0 2 * * ? *)",
        "timeZone": "Europe/Paris",
        "job": {"type": "test_echo", "payload": {"value": "night"}},
        **extra,
    }


def create(pipeline: Pipeline, **extra: Any) -> dict[str, Any]:
    response = pipeline.request("POST", "/schedules", body(**extra))
    assert response.status == 201, response.body
    return dict(response.body)


def fire(schedule_id: str, scheduled_time: str, owner: str = OWNER) -> dict[str, Any]:
    event = firing_input(owner, schedule_id, scheduled_time)
    return dict(firing.handler(event, LambdaContext(function_name="schedules")))


def test_a_schedule_shows_its_next_fire_times_in_its_time_zone(pipeline: Pipeline, clock: Clock) -> None:
    clock.now = datetime(2026, 3, 27, 12, tzinfo=UTC).timestamp()  # Paris goes to summer time on the 29th
    created = create(pipeline)
    assert created["nextFireTimes"][:3] == [
        "2026-03-28T01:00:00.000Z",  # 02:00 CET
        "2026-03-30T00:00:00.000Z",  # 02:00 CEST: on the 29th the clocks jump from 02:00 to 03:00
        "2026-03-31T00:00:00.000Z",
    ]
    assert created["state"] == "enabled"
    assert created["lastJobs"] == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"expression": "cron(0 2 * * * *)"}, "exactly one of day-of-month and day-of-week is ?"),
        ({"expression": "rate(1 minutes)"}, "singular for 1"),
        ({"timeZone": "Mars/Olympus"}, "IANA"),
        ({"expression": "cron(0 0 30 2 ? *)"}, "never fires"),
        ({"expression": "rate(99999999999999999999 minutes)"}, "a period is at most"),
        ({"expression": "cron(0 0 ? * 1/2 *)"}, "day-of-week: /"),
    ],
)
def test_an_expression_eventbridge_would_refuse_is_400_with_why(
    pipeline: Pipeline, change: dict[str, str], why: str
) -> None:
    """Seen failing when create_schedule skipped check_expression (201 for each); the long rate was a
    500 (OverflowError) at create and at update before rates had a longest period."""
    response = pipeline.request("POST", "/schedules", body(**change))
    assert response.status == 400
    assert response.body["error"]["code"] == "invalid_schedule"
    assert why in response.body["error"]["message"]
    schedule_id = create(pipeline)["scheduleId"]
    updated = pipeline.request("PATCH", f"/schedules/{schedule_id}", change)
    assert (updated.status, updated.body["error"]["code"]) == (400, "invalid_schedule")


def test_the_job_is_checked_as_post_jobs_would(pipeline: Pipeline) -> None:
    response = pipeline.request(
        "POST", "/schedules", body(job={"type": "test_echo", "payload": {"value": 3}})
    )
    assert (response.status, response.body["error"]["code"]) == (422, "invalid_payload")


def test_a_firing_delivered_twice_creates_one_job(pipeline: Pipeline) -> None:
    """Seen failing when the firing's job id was a fresh uuid4 (two jobs, two messages)."""
    schedule_id = create(pipeline)["scheduleId"]
    first = fire(schedule_id, "2026-03-28T01:00:00Z")
    again = fire(schedule_id, "2026-03-28T01:00:00Z")
    assert (first["outcome"], again["outcome"]) == ("created", "duplicate")
    assert first["jobId"] == again["jobId"]
    next_night = fire(schedule_id, "2026-03-29T00:00:00Z")
    assert next_night["outcome"] == "created"
    assert next_night["jobId"] != first["jobId"]

    shown = pipeline.request("GET", f"/schedules/{schedule_id}").body["lastJobs"]
    assert [j["jobId"] for j in shown] == [next_night["jobId"], first["jobId"]]
    listed = pipeline.request("GET", "/jobs").body["jobs"]
    assert sorted(j["jobId"] for j in listed) == sorted([first["jobId"], next_night["jobId"]])
    pipeline.drain()
    assert pipeline.job(first["jobId"])["result"] is not None


def test_overlap_skip_creates_nothing_while_the_last_job_is_not_finished(pipeline: Pipeline) -> None:
    """Seen failing when fire() ignored the overlap policy (a second job while the first was pending)."""
    schedule_id = create(pipeline, overlap="skip", expression="rate(5 minutes)")["scheduleId"]
    assert fire(schedule_id, "2026-03-28T01:00:00Z")["outcome"] == "created"
    assert fire(schedule_id, "2026-03-28T01:05:00Z")["outcome"] == "skipped"
    pipeline.drain()
    assert fire(schedule_id, "2026-03-28T01:10:00Z")["outcome"] == "created"


def test_a_paused_schedule_does_not_fire_but_runs_when_asked(pipeline: Pipeline) -> None:
    schedule_id = create(pipeline)["scheduleId"]
    paused = pipeline.request("PATCH", f"/schedules/{schedule_id}", {"state": "paused"})
    assert (paused.status, paused.body["state"], paused.body["nextFireTimes"]) == (200, "paused", [])
    assert fire(schedule_id, "2026-03-28T01:00:00Z")["outcome"] == "idle"
    run = pipeline.request("POST", f"/schedules/{schedule_id}/run")
    assert run.status == 202
    assert pipeline.job(run.body["jobId"])["type"] == "test_echo"
    resumed = pipeline.request("PATCH", f"/schedules/{schedule_id}", {"state": "enabled"})
    assert resumed.body["nextFireTimes"]


def test_another_clients_schedule_is_404_and_a_deleted_one_never_fires(pipeline: Pipeline) -> None:
    schedule_id = create(pipeline)["scheduleId"]
    for method, path in (
        ("GET", f"/schedules/{schedule_id}"),
        ("PATCH", f"/schedules/{schedule_id}"),
        ("DELETE", f"/schedules/{schedule_id}"),
        ("POST", f"/schedules/{schedule_id}/run"),
    ):
        other = pipeline.request(method, path, {} if method == "PATCH" else None, api_key_id="another")
        assert (other.status, other.body["error"]["code"]) == (404, "schedule_not_found"), path
    assert pipeline.request("GET", "/schedules", api_key_id="another").body["schedules"] == []
    assert fire(schedule_id, "2026-03-28T01:00:00Z", owner="another")["outcome"] == "idle"

    assert pipeline.request("DELETE", f"/schedules/{schedule_id}").status == 200
    assert pipeline.request("GET", f"/schedules/{schedule_id}").status == 404
    assert fire(schedule_id, "2026-03-28T01:00:00Z")["outcome"] == "idle"


def test_a_client_keeps_at_most_its_cap_of_schedules(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen failing when ScheduleStore.create put the schedule without its count (a third was 201)."""
    from lambdas import config
    from lambdas.models import settings

    monkeypatch.setenv(config.ENV_MAX_SCHEDULES_PER_CLIENT, "2")
    settings.reset()
    first = create(pipeline)["scheduleId"]
    create(pipeline)
    third = pipeline.request("POST", "/schedules", body())
    assert (third.status, third.body["error"]["code"]) == (409, "schedule_limit")
    assert pipeline.request("POST", "/schedules", body(), api_key_id="another").status == 201  # its own cap
    pipeline.request("DELETE", f"/schedules/{first}")
    assert pipeline.request("POST", "/schedules", body()).status == 201


def test_the_local_timer_fires_each_due_time_once_with_the_targets_input(
    pipeline: Pipeline, clock: Clock
) -> None:
    """local_runtime/schedule_timer.py, as `make run` drives it. Seen failing when tick() did not move
    `_since` on (every tick fired the start again: four jobs, not two)."""
    from lambdas.store.schedules import ScheduleStore
    from local_runtime.schedule_timer import ScheduleTimer

    clock.now = datetime(2026, 5, 1, 12, tzinfo=UTC).timestamp()
    timer = ScheduleTimer(
        ScheduleStore(pipeline.env["SCHEDULES_TABLE_NAME"], clock), lambda e: None, clock=clock
    )
    invoked: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> None:
        invoked.append(event)
        firing.handler(event, LambdaContext(function_name="schedules"))

    timer._invoke = invoke
    clock.advance(0.5)  # created after the timer's last tick
    schedule_id = create(pipeline, expression="rate(5 minutes)")["scheduleId"]
    clock.advance(1)
    timer.tick()
    timer.tick()
    clock.advance(300)
    timer.tick()
    assert [e["scheduledTime"] for e in invoked] == ["2026-05-01T12:00:00Z", "2026-05-01T12:05:00Z"]
    assert {e["scheduleId"] for e in invoked} == {schedule_id}
    assert len(pipeline.request("GET", f"/schedules/{schedule_id}").body["lastJobs"]) == 2

    pipeline.request("PATCH", f"/schedules/{schedule_id}", {"state": "paused"})
    clock.advance(600)
    assert timer.tick() == []


def test_the_local_timer_fires_the_start_of_a_schedule_its_last_tick_read_too_early(
    pipeline: Pipeline, clock: Clock
) -> None:
    """The API stamps a schedule's start, then writes it; a tick that read the table in between saw
    nothing, yet moved on past the start. Seen failing (CI, `make run`) when every schedule's window began
    at the last tick: the start never fired."""
    from lambdas.store.schedules import ScheduleStore
    from local_runtime.schedule_timer import ScheduleTimer

    class ReadEarly:
        """The table as a tick read it just before the API's write landed."""

        def __init__(self, store: ScheduleStore) -> None:
            self.store, self.early = store, True

        def all(self) -> list[Any]:
            return [] if self.early else self.store.all()

    clock.now = datetime(2026, 5, 1, 12, tzinfo=UTC).timestamp()
    table = ReadEarly(ScheduleStore(pipeline.env["SCHEDULES_TABLE_NAME"], clock))
    invoked: list[dict[str, Any]] = []
    timer = ScheduleTimer(table, invoked.append, clock=clock)  # type: ignore[arg-type]
    clock.advance(0.5)
    create(pipeline, expression="rate(5 minutes)")
    paused = create(pipeline, expression="rate(5 minutes)", state="paused")["scheduleId"]
    clock.advance(0.5)
    assert timer.tick() == []
    table.early = False
    clock.advance(1)
    timer.tick()
    clock.advance(1)
    timer.tick()
    pipeline.request("PATCH", f"/schedules/{paused}", {"state": "enabled"})
    clock.advance(1)
    timer.tick()  # a resumed schedule's start is not made up for
    assert [e["scheduledTime"] for e in invoked] == ["2026-05-01T12:00:00Z"]


def test_the_minute_tick_fires_the_start_of_a_rate_schedule_the_tick_before_missed(
    pipeline: Pipeline, clock: Clock
) -> None:
    """The deployed path's same race: the 12:00 tick read the table before a schedule stamped 11:59:59.9
    was written, so the 12:01 tick looks back one minute for a schedule that never fired. Seen failing when
    fire_due began every schedule's window at the minute before its tick."""
    clock.now = datetime(2026, 5, 1, 11, 59, 59, 900000, tzinfo=UTC).timestamp()
    late = create(pipeline, expression="rate(5 minutes)")["scheduleId"]
    older = create(pipeline, expression="cron(59 11 * * ? *)")["scheduleId"]  # 11:59, before its start
    clock.now = datetime(2026, 5, 1, 12, 1, 0, 300000, tzinfo=UTC).timestamp()
    firing.handler({"tick": "2026-05-01T12:01:00Z"}, LambdaContext(function_name="schedules"))
    firing.handler({"tick": "2026-05-01T12:02:00Z"}, LambdaContext(function_name="schedules"))
    jobs = pipeline.request("GET", f"/schedules/{late}").body["lastJobs"]
    assert [j["scheduledFor"] for j in jobs] == ["2026-05-01T11:59:59.000Z"]
    assert pipeline.request("GET", f"/schedules/{older}").body["lastJobs"] == []


def test_the_minute_tick_fires_what_came_due_once_even_when_delivered_twice(
    pipeline: Pipeline, clock: Clock
) -> None:
    """The deployed path: the stack's one EventBridge Scheduler schedule sends {"tick": <its time>}.
    Seen failing when fire_due used a fresh job id per call (the repeated tick made a second job)."""
    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    every_minute = create(pipeline, expression="cron(* * * * ? *)")["scheduleId"]
    create(pipeline, expression="cron(0 3 * * ? *)")  # not due in this minute
    tick = {"tick": "2026-05-01T12:00:00Z"}
    first = firing.handler(tick, LambdaContext(function_name="schedules"))
    again = firing.handler(tick, LambdaContext(function_name="schedules"))
    assert (first["created"], again["created"]) == (1, 0)
    assert again["firings"] == 1  # the same firing, found made
    jobs = pipeline.request("GET", f"/schedules/{every_minute}").body["lastJobs"]
    assert [j["scheduledFor"] for j in jobs] == ["2026-05-01T12:00:00.000Z"]


def test_a_firing_logs_its_new_jobs_transition_naming_the_schedule(
    pipeline: Pipeline, log_lines: Lines
) -> None:
    """docs/design.md: every state change is logged, a job's first included. Seen to fail against
    `schedules.fire`'s `log_transition(...)` with the to-state `None` and with it left out (the fields
    after it shifted; sample 581628's `x_fire__mutmut_55` and `_61`)."""
    schedule_id = create(pipeline)["scheduleId"]

    job_id = fire(schedule_id, "2026-03-28T01:00:00Z")["jobId"]

    assert transitions(log_lines(), job_id) == [
        (f"job {job_id} new -> pending", "test_echo", "new", "pending", 0, f"schedule {schedule_id}")
    ]


def test_a_patch_with_a_job_changes_the_job_each_later_firing_creates(pipeline: Pipeline) -> None:
    """Seen to fail (a 500, the TypeError of `replace(None, ...)`) against `update_schedule`'s
    `replace(changed, job_type=...)` given `None` (sample 581628's `x_update_schedule__mutmut_28`)."""
    schedule_id = create(pipeline, name="keep")["scheduleId"]

    changed = pipeline.request(
        "PATCH", f"/schedules/{schedule_id}", {"job": {"type": "test_echo", "payload": {"value": "day"}}}
    )

    assert changed.status == 200, changed.body
    assert (changed.body["name"], changed.body["job"]["payload"]) == ("keep", {"value": "day"})
    job_id = fire(schedule_id, "2026-03-28T01:00:00Z")["jobId"]
    assert pipeline.job(job_id)["payload"] == {"value": "day"}


def test_the_owners_counter_item_is_no_schedule_to_read_or_fire(pipeline: Pipeline) -> None:
    """The schedules table keeps each owner's count under the sort key `#count`; no schedule id starts
    with '#'. Seen to fail (the counter read as a schedule: a KeyError) against `ScheduleStore.get`'s
    `startswith("#")` as `startswith("XX#XX")` (sample 581628's `xǁScheduleStoreǁget__mutmut_2`)."""
    create(pipeline)

    read = pipeline.request("GET", "/schedules/%23count")

    assert (read.status, read.body["error"]["code"]) == (404, "schedule_not_found")
    assert fire("#count", "2026-03-28T01:00:00Z")["outcome"] == "idle"


def test_a_schedule_read_right_after_its_creation_is_found_though_replicas_lag(pipeline: Pipeline) -> None:
    """An eventually consistent read may miss a write that just completed (DynamoDB's documented
    model); moto's reads never lag, so here every read of the schedules table that does not ask for
    consistency finds nothing. Seen to fail (a 404) against `ScheduleStore.get` without
    `ConsistentRead=True` (sample 581628's `xǁScheduleStoreǁget__mutmut_10`)."""
    with replicas_lag(pipeline.env["SCHEDULES_TABLE_NAME"], "GetItem") as asked:
        schedule_id = create(pipeline)["scheduleId"]
        read = pipeline.request("GET", f"/schedules/{schedule_id}")

    assert read.status == 200, read.body
    assert asked  # the hook saw the read
