"""Recurring schedules: the /schedules routes and the `schedules` function that fires them, under moto."""

from datetime import UTC, datetime
from typing import Any

import pytest

from lambdas.handlers import schedules as firing
from lambdas.lifecycle.requests import schedules
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


def create(pipeline: Pipeline, api_key_id: str | None = None, **extra: Any) -> dict[str, Any]:
    response = pipeline.request("POST", "/schedules", body(**extra), api_key_id=api_key_id)
    assert response.status == 201, response.body
    return dict(response.body)


def fire(schedule_id: str, scheduled_time: str, owner: str = OWNER) -> dict[str, Any]:
    """One firing, as the schedules function's tick makes it (its own stores and cap)."""
    parts = firing._parts()
    moment = int(datetime.fromisoformat(scheduled_time).timestamp() * 1000)
    schedule = parts.schedules.get(owner, schedule_id)
    fired = schedules.fire(parts.schedules, parts.store, parts.queue, schedule, moment, cap=parts.cap)
    return {"outcome": fired.outcome.value, "jobId": fired.job.job_id if fired.job else None}


def tick(at: str) -> dict[str, Any]:
    return dict(firing.handler({"tick": at}, LambdaContext(function_name="schedules")))


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


def test_the_templates_tick_as_the_local_runtime_sends_it_runs_the_deployed_fire_due(
    pipeline: Pipeline, clock: Clock, template: dict[str, Any]
) -> None:
    """`make run` fired schedules by its own timer, with a per-firing event only it sent; now it emulates
    the template's AWS::Scheduler::Schedule, and what it sends is what the function takes on AWS. Seen
    failing (a KeyError: no `tick`) with the template's Input not filled in by `scheduled_event`."""
    from local_runtime.scheduler import scheduled_event
    from local_runtime.template.model import Schedule, ScheduleKind

    declared = [d for d in template["Resources"].values() if d["Type"] == "AWS::Scheduler::Schedule"]
    assert len(declared) == 1
    props = declared[0]["Properties"]
    tick_schedule = Schedule(
        logical_id="Tick",
        kind=ScheduleKind.SCHEDULER,
        expression=props["ScheduleExpression"],
        function="schedules",
        arn="arn:aws:scheduler:us-east-1:123456789012:schedule/g/tick",
        input=props["Target"]["Input"],
    )
    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    schedule_id = create(pipeline, expression="rate(5 minutes)")["scheduleId"]
    clock.now = datetime(2026, 5, 1, 12, 0, 1, tzinfo=UTC).timestamp()

    moment = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    event = scheduled_event(tick_schedule, moment, "123456789012", "us-east-1")
    answered = firing.handler(event, LambdaContext(function_name="schedules"))

    assert answered["created"] == 1
    jobs = pipeline.request("GET", f"/schedules/{schedule_id}").body["lastJobs"]
    assert [j["scheduledFor"] for j in jobs] == ["2026-05-01T11:59:30.000Z"]


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
    tick("2026-05-01T12:01:00Z")
    tick("2026-05-01T12:02:00Z")
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
    first = tick("2026-05-01T12:00:00Z")
    again = tick("2026-05-01T12:00:00Z")
    assert (first["created"], again["created"]) == (1, 0)
    assert again["firings"] == 1  # the same firing, found made
    jobs = pipeline.request("GET", f"/schedules/{every_minute}").body["lastJobs"]
    assert [j["scheduledFor"] for j in jobs] == ["2026-05-01T12:00:00.000Z"]


def test_a_firing_logs_its_new_jobs_transition_naming_the_schedule(
    pipeline: Pipeline, log_lines: Lines
) -> None:
    """docs/internals/README.md: every state change is logged, a job's first included. Seen to fail against
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
    `ConsistentRead=True` (sample 581628's `xǁScheduleStoreǁget__mutmut_10`); the read is a Query of the
    schedule's two items since its firings write an item of their own (seen to fail with
    `consistent=True` dropped from that Query)."""
    with replicas_lag(pipeline.env["SCHEDULES_TABLE_NAME"], "Query") as asked:
        schedule_id = create(pipeline)["scheduleId"]
        read = pipeline.request("GET", f"/schedules/{schedule_id}")

    assert read.status == 200, read.body
    assert asked  # the hook saw the read


def test_one_schedule_fails_alone_and_every_other_fires_on_time(pipeline: Pipeline, clock: Clock) -> None:
    """Issue: one client's `rate(50000 days)` made every tick raise OverflowError, so no schedule of any
    client fired. Seen failing (OverflowError out of the tick) with `Rate.fires_after` unbounded and with
    `fire_due`'s `except Exception` removed (the broken item below then stops the tick)."""
    from lambdas.store.schedules import ScheduleStore

    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    long_rate = create(pipeline, expression="rate(50000 days)", api_key_id="hostile")
    broken = create(pipeline, expression="rate(5 minutes)", api_key_id="hostile")["scheduleId"]
    every_minute = create(pipeline, expression="cron(* * * * ? *)")["scheduleId"]
    # An item an older version wrote with an expression today's rules refuse (no API write makes one).
    table = ScheduleStore(pipeline.env["SCHEDULES_TABLE_NAME"])
    table._ddb.update_item(
        TableName=pipeline.env["SCHEDULES_TABLE_NAME"],
        Key={"owner": {"S": "hostile"}, "scheduleId": {"S": broken}},
        UpdateExpression="SET #e = :e",
        ExpressionAttributeNames={"#e": "expression"},
        ExpressionAttributeValues={":e": {"S": "cron(0 0 ? * 1/2 *)"}},
    )

    first = tick("2026-05-01T12:00:00Z")
    clock.advance(60)
    second = tick("2026-05-01T12:01:00Z")

    assert (first["created"], first["failed"]) == (2, 1)  # the long rate's start, the every-minute cron
    assert (second["created"], second["failed"]) == (1, 1)
    jobs = pipeline.request("GET", f"/schedules/{every_minute}").body["lastJobs"]
    assert [j["scheduledFor"] for j in jobs] == ["2026-05-01T12:01:00.000Z", "2026-05-01T12:00:00.000Z"]
    long_view = pipeline.request("GET", f"/schedules/{long_rate['scheduleId']}", api_key_id="hostile").body
    assert (len(long_view["lastJobs"]), long_view["failing"]) == (1, False)
    shown = pipeline.request("GET", f"/schedules/{broken}", api_key_id="hostile")
    assert shown.status == 200, shown.body
    assert shown.body["failing"] is True
    assert "day-of-week: /" in shown.body["lastError"]
    assert shown.body["lastErrorAt"] == "2026-05-01T12:00:30.000Z"  # the second tick ran then


def test_a_clients_firings_past_its_days_cap_are_skipped_with_the_reason_others_fire(
    pipeline: Pipeline, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """100 rate(1 minute) schedules made 144,000 jobs a day, past the usage plan's daily quota, which
    firings never touched. Seen failing (three created) with `fire`'s `_count_firing` call removed."""
    from lambdas import config
    from lambdas.models import settings

    monkeypatch.setenv(config.ENV_MAX_FIRINGS_PER_CLIENT_DAY, "2")
    settings.reset()
    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    busy = [create(pipeline, expression="cron(* * * * ? *)", api_key_id="busy") for _ in range(3)]
    calm = create(pipeline, expression="cron(* * * * ? *)")["scheduleId"]

    first = tick("2026-05-01T12:00:00Z")
    again = tick("2026-05-01T12:00:00Z")  # a retried tick counts no firing twice

    assert (first["created"], first["over_cap"]) == (3, 1)  # two of busy's, calm's
    assert (again["created"], again.get("over_cap", 0)) == (0, 1)
    views = [pipeline.request("GET", f"/schedules/{s['scheduleId']}", api_key_id="busy").body for s in busy]
    skipped = [v for v in views if v["failing"]]
    assert len(skipped) == 1
    assert "skipped" in skipped[0]["lastError"]
    assert "2 jobs on 2026-05-01" in skipped[0]["lastError"]
    assert len(pipeline.request("GET", f"/schedules/{calm}").body["lastJobs"]) == 1
    clock.now = datetime(2026, 5, 2, 0, 0, 30, tzinfo=UTC).timestamp()
    next_day = tick("2026-05-02T00:00:00Z")
    assert (next_day["created"], next_day["over_cap"]) == (3, 1)  # a new day counts from 0


def test_a_firing_writes_small_items_never_the_schedule(pipeline: Pipeline, clock: Clock) -> None:
    """Each firing rewrote the whole schedule item (its payload included: ~186 write units for a maximal
    one). Seen failing with `record_firing` writing to the schedule's own key."""
    from lambdas.store import clients

    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    big = {"type": "test_echo", "payload": {"value": "x" * 60_000}}
    created = create(pipeline, expression="cron(* * * * ? *)", job=big)
    table = pipeline.env["SCHEDULES_TABLE_NAME"]
    writes: list[dict[str, Any]] = []

    def note(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == table:
            writes.append(params)

    events = clients.client("dynamodb").meta.events
    for operation in ("PutItem", "UpdateItem", "DeleteItem"):
        events.register(f"provide-client-params.dynamodb.{operation}", note)
    try:
        assert tick("2026-05-01T12:00:00Z")["created"] == 1
    finally:
        for operation in ("PutItem", "UpdateItem", "DeleteItem"):
            events.unregister(f"provide-client-params.dynamodb.{operation}", note)

    written = sorted(w["Key"]["scheduleId"]["S"] for w in writes)
    assert written == ["#day#2026-05-01", f"{created['scheduleId']}#fired"]
    assert all(len(str(w)) < 1024 for w in writes)  # one write unit each


def test_a_schedules_payload_is_bounded_well_below_the_body_limit(pipeline: Pipeline) -> None:
    """Seen failing (201) with `_checked_job`'s size check removed."""
    from lambdas import config

    over = {"type": "test_echo", "payload": {"value": "x" * config.MAX_SCHEDULE_PAYLOAD_BYTES}}
    response = pipeline.request("POST", "/schedules", body(job=over))
    assert (response.status, response.body["error"]["code"]) == (400, "invalid_schedule")
    assert f"at most {config.MAX_SCHEDULE_PAYLOAD_BYTES} bytes" in response.body["error"]["message"]
    schedule_id = create(pipeline)["scheduleId"]
    patched = pipeline.request("PATCH", f"/schedules/{schedule_id}", {"job": over})
    assert (patched.status, patched.body["error"]["code"]) == (400, "invalid_schedule")


def test_the_operator_lists_every_clients_schedules_and_pauses_or_deletes_any(pipeline: Pipeline) -> None:
    """Issue: no route let the operator see or stop a client's schedule. Seen failing with `owner_of`
    answering the caller's own owner whatever `client` says (the operator saw none of alice's)."""
    from lambdas import config

    operator = pipeline.env[config.ENV_OPERATOR_KEY_ID]
    alices = [create(pipeline, api_key_id="alice")["scheduleId"] for _ in range(3)]
    bobs = create(pipeline, api_key_id="bob")["scheduleId"]

    every = pipeline.request("GET", "/schedules?limit=2", api_key_id=operator)
    seen = [(s["owner"], s["scheduleId"]) for s in every.body["schedules"]]
    cursor = every.body["nextCursor"]
    while cursor:
        page = pipeline.request("GET", f"/schedules?limit=2&cursor={cursor}", api_key_id=operator).body
        seen += [(s["owner"], s["scheduleId"]) for s in page["schedules"]]
        cursor = page["nextCursor"]
    assert sorted(seen) == sorted([*(("alice", a) for a in alices), ("bob", bobs)])
    of_alice = pipeline.request("GET", "/schedules?client=alice", api_key_id=operator).body["schedules"]
    assert sorted(s["scheduleId"] for s in of_alice) == sorted(alices)

    paused = pipeline.request(
        "PATCH", f"/schedules/{alices[0]}?client=alice", {"state": "paused"}, api_key_id=operator
    )
    assert (paused.status, paused.body["state"], paused.body["owner"]) == (200, "paused", "alice")
    deleted = pipeline.request("DELETE", f"/schedules/{bobs}?client=bob", api_key_id=operator)
    assert deleted.status == 200
    assert pipeline.request("GET", "/schedules", api_key_id="bob").body["schedules"] == []
    mine = pipeline.request("GET", f"/schedules/{alices[0]}", api_key_id="alice").body
    assert mine["state"] == "paused"

    for method, path in (("GET", "/schedules?client=alice"), ("GET", f"/schedules/{alices[1]}?client=alice")):
        refused = pipeline.request(method, path, api_key_id="bob")
        assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden"), path
    own = pipeline.request("GET", "/schedules?client=alice", api_key_id="alice")
    assert len(own.body["schedules"]) == 3


def _calls_on(table: str) -> "tuple[set[str], Any]":
    """The DynamoDB actions called on `table` meanwhile (the store's shared client), and the undo."""
    from lambdas.store import clients

    called: set[str] = set()

    def note(model: Any, params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == table:
            called.add(f"dynamodb:{model.name}")

    events = clients.client("dynamodb").meta.events
    events.register("provide-client-params.dynamodb", note)
    return called, lambda: events.unregister("provide-client-params.dynamodb", note)


def test_the_schedules_functions_calls_on_its_table_are_all_in_its_role(
    pipeline: Pipeline, clock: Clock
) -> None:
    """moto grants every call; AWS only what the role holds (infra/access.py). A tick that fires, fails
    one schedule and skips one over the day's cap calls nothing its row lacks. Seen failing (Query) with
    the row's GetItem kept after `ScheduleStore.get` became a Query of the schedule's two items."""
    from infra.access import ACCESS, Resource

    clock.now = datetime(2026, 5, 1, 11, 59, 30, tzinfo=UTC).timestamp()
    create(pipeline, expression="cron(* * * * ? *)", overlap="skip")
    create(pipeline, expression="rate(1 minute)")
    called, undo = _calls_on(pipeline.env["SCHEDULES_TABLE_NAME"])
    try:
        tick("2026-05-01T12:00:00Z")
        clock.advance(60)
        tick("2026-05-01T12:01:00Z")
    finally:
        undo()

    assert called >= {"dynamodb:Scan", "dynamodb:Query", "dynamodb:UpdateItem"}
    assert called <= set(ACCESS["schedules"][Resource.SCHEDULES_TABLE])


def test_the_apis_calls_on_the_schedules_table_are_all_in_its_role(pipeline: Pipeline) -> None:
    """Every /schedules route, the operator's list of every client's included. Seen failing (Scan) with
    the api row without Scan."""
    from infra.access import ACCESS, Resource
    from lambdas import config

    operator = pipeline.env[config.ENV_OPERATOR_KEY_ID]
    called, undo = _calls_on(pipeline.env["SCHEDULES_TABLE_NAME"])
    try:
        schedule_id = create(pipeline)["scheduleId"]
        pipeline.request("GET", "/schedules")
        pipeline.request("GET", "/schedules", api_key_id=operator)
        pipeline.request("GET", f"/schedules/{schedule_id}")
        pipeline.request("PATCH", f"/schedules/{schedule_id}", {"state": "paused"})
        pipeline.request("POST", f"/schedules/{schedule_id}/run")
        pipeline.request("DELETE", f"/schedules/{schedule_id}?client={OWNER}", api_key_id=operator)
    finally:
        undo()

    # (TransactWriteItems names its tables per item, not here: infra/access.py authorises it per item.)
    assert {"dynamodb:Scan", "dynamodb:Query", "dynamodb:PutItem"} <= called
    assert called <= set(ACCESS["api"][Resource.SCHEDULES_TABLE])


def test_a_cursor_naming_another_clients_partition_is_refused(pipeline: Pipeline) -> None:
    """A list cursor is base64 JSON whose query tag anyone can compute; one that starts a client's Query
    in another owner's partition is a ValidationException (a 500) in DynamoDB, where moto answers. Seen
    failing (200) with `list_schedules`'s owner check removed."""
    from lambdas.lifecycle.requests import paging

    create(pipeline, api_key_id="alice")
    forged = paging.encode(paging.query_tag("schedules", OWNER), ["alice", "0"])

    refused = pipeline.request("GET", f"/schedules?cursor={forged}")

    assert (refused.status, refused.body["error"]["code"]) == (400, "invalid_cursor")
