"""local_runtime/scheduler.py's rules, one by one: when a template's schedule fires and what its target
receives (EventBridge Scheduler's context attributes, a scheduled rule's event)."""

import itertools
import json
from datetime import UTC, datetime

from local_runtime.scheduler import fire_times, scheduled_event
from local_runtime.template.model import Schedule, ScheduleKind

START = datetime(2026, 5, 1, 12, 0, 23, 456000, tzinfo=UTC)
TICK_INPUT = json.dumps({"tick": "<aws.scheduler.scheduled-time>"})


def schedule(kind: ScheduleKind, expression: str, **extra: object) -> Schedule:
    return Schedule(
        logical_id="Tick",
        kind=kind,
        expression=expression,
        function="F",
        arn="arn:s",
        **extra,  # type: ignore[arg-type]
    )


def first(times: object, count: int) -> list[str]:
    return [t.strftime("%Y-%m-%dT%H:%M:%S") for t in itertools.islice(times, count)]  # type: ignore[call-overload]


def test_a_scheduler_rate_fires_at_its_creation_and_every_period_after() -> None:
    """EventBridge Scheduler: a rate schedule without StartDate starts invoking at once. Seen failing with
    the rule's one-period delay applied to Scheduler schedules too."""
    tick = schedule(ScheduleKind.SCHEDULER, "rate(1 minute)", input=TICK_INPUT)
    assert first(fire_times(tick, START), 3) == [
        "2026-05-01T12:00:23",
        "2026-05-01T12:01:23",
        "2026-05-01T12:02:23",
    ]


def test_a_rules_first_run_comes_one_period_after_its_creation() -> None:
    rule = schedule(ScheduleKind.RULE, "rate(5 minutes)")
    assert first(fire_times(rule, START), 2) == ["2026-05-01T12:05:23", "2026-05-01T12:10:23"]
    assert first(fire_times(rule, START, every_seconds=1), 2) == [
        "2026-05-01T12:00:24",
        "2026-05-01T12:00:25",
    ]


def test_a_scheduler_cron_is_read_in_its_time_zone_and_not_sped_up() -> None:
    """`every_seconds` (development) speeds up rules only: a Scheduler schedule fires as declared. Seen
    failing with the override applied to every schedule."""
    nightly = schedule(ScheduleKind.SCHEDULER, "cron(30 2 * * ? *)", time_zone="Asia/Kolkata")
    assert first(fire_times(nightly, START, every_seconds=1), 2) == [
        "2026-05-01T21:00:00",  # 02:30 in Kolkata (UTC+5:30)
        "2026-05-02T21:00:00",
    ]


def test_a_scheduler_target_gets_its_input_with_the_context_attributes_filled() -> None:
    """What the deployed tick sends the schedules function, as EventBridge Scheduler fills it in. Seen
    failing with the scheduled time written with its fraction of a second."""
    tick = schedule(
        ScheduleKind.SCHEDULER,
        "rate(1 minute)",
        input=json.dumps(
            {
                "tick": "<aws.scheduler.scheduled-time>",
                "arn": "<aws.scheduler.schedule-arn>",
                "id": "<aws.scheduler.execution-id>",
                "attempt": "<aws.scheduler.attempt-number>",
            }
        ),
    )
    event = scheduled_event(tick, START, "123456789012", "us-east-1")
    assert event["tick"] == "2026-05-01T12:00:23Z"
    assert (event["arn"], event["attempt"]) == ("arn:s", "1")
    assert len(event["id"]) == 16
    assert event["id"] != scheduled_event(tick, START, "123456789012", "us-east-1")["id"]


def test_a_rule_sends_its_constant_input_or_a_scheduled_event() -> None:
    assert scheduled_event(
        schedule(ScheduleKind.RULE, "rate(1 minute)", input='{"a": 1}'), START, "1", "r"
    ) == {"a": 1}
    event = scheduled_event(schedule(ScheduleKind.RULE, "rate(1 minute)"), START, "1", "r")
    assert (event["detail-type"], event["resources"], event["time"]) == (
        "Scheduled Event",
        ["arn:s"],
        "2026-05-01T12:00:23Z",
    )
