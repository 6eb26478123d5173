"""The one next-fire-time implementation (lambdas/models/schedule_expressions.py), against known cases:
month ends, L, W, #, the clocks going forward and back, rate(), and what EventBridge refuses."""

from datetime import UTC, datetime

import pytest

from lambdas.models.schedule_expressions import InvalidExpressionError, next_fire_times, parse, zone


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def fires(
    expression: str, after: str, count: int = 3, tz: str = "UTC", start: str | None = None
) -> list[str]:
    begin = utc(start or after)
    times = next_fire_times(parse(expression), tz, utc(after), begin, count)
    return [t.strftime("%Y-%m-%dT%H:%M") for t in times]


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        # every 15 minutes from minute 0
        (
            "cron(0/15 * * * ? *)",
            "2026-03-01T10:07",
            ["2026-03-01T10:15", "2026-03-01T10:30", "2026-03-01T10:45"],
        ),
        # the last day of each month, leap February included
        (
            "cron(0 12 L * ? *)",
            "2028-01-31T13:00",
            ["2028-02-29T12:00", "2028-03-31T12:00", "2028-04-30T12:00"],
        ),
        # 15W: the 15th is a Saturday in August 2026 -> Friday 14th; a Sunday in March 2026 -> Monday 16th
        (
            "cron(0 9 15W * ? 2026)",
            "2026-03-01T00:00",
            ["2026-03-16T09:00", "2026-04-15T09:00", "2026-05-15T09:00"],
        ),
        ("cron(0 9 15W 8 ? 2026)", "2026-01-01T00:00", ["2026-08-14T09:00"]),
        # 1W on a Saturday (August 2026) stays in the month: Monday 3rd
        ("cron(0 9 1W 8 ? 2026)", "2026-01-01T00:00", ["2026-08-03T09:00"]),
        # 31W on a Sunday (May 2026) stays in the month: Friday 29th
        ("cron(0 9 31W 5 ? 2026)", "2026-01-01T00:00", ["2026-05-29T09:00"]),
        # the second Tuesday (3#2) of each month
        (
            "cron(30 8 ? * 3#2 *)",
            "2026-01-01T00:00",
            ["2026-01-13T08:30", "2026-02-10T08:30", "2026-03-10T08:30"],
        ),
        # the last Friday (6L) of each month; L alone in day-of-week is Saturday
        (
            "cron(0 18 ? * 6L *)",
            "2026-01-01T00:00",
            ["2026-01-30T18:00", "2026-02-27T18:00", "2026-03-27T18:00"],
        ),
        (
            "cron(0 0 ? * L *)",
            "2026-01-01T00:00",
            ["2026-01-03T00:00", "2026-01-10T00:00", "2026-01-17T00:00"],
        ),
        # names, ranges and a year list
        (
            "cron(0 10 ? JAN-FEB MON-FRI 2027,2029)",
            "2026-12-31T23:00",
            ["2027-01-01T10:00", "2027-01-04T10:00"],
        ),
        # the 31st only in months that have one
        (
            "cron(0 0 31 * ? *)",
            "2026-01-31T01:00",
            ["2026-03-31T00:00", "2026-05-31T00:00", "2026-07-31T00:00"],
        ),
        # February 30th never comes
        ("cron(0 0 30 2 ? *)", "2026-01-01T00:00", []),
        # a day's name wherever its number may stand: alone (WED, whose W is no wildcard), in a list, with #
        # and L; 2026-01-07 is a Wednesday
        ("cron(0 12 ? * WED *)", "2026-01-01T00:00", ["2026-01-07T12:00", "2026-01-14T12:00"]),
        ("cron(0 12 ? * MON,WED *)", "2026-01-06T00:00", ["2026-01-07T12:00", "2026-01-12T12:00"]),
        ("cron(0 12 ? * WED#2 *)", "2026-01-01T00:00", ["2026-01-14T12:00", "2026-02-11T12:00"]),
        ("cron(0 12 ? * WEDL *)", "2026-01-01T00:00", ["2026-01-28T12:00", "2026-02-25T12:00"]),
        ("cron(0 12 ? * TUE-WED *)", "2026-01-07T13:00", ["2026-01-13T12:00", "2026-01-14T12:00"]),
        # / in the fields that take it: day-of-month every 10th day from the 5th, months from March by 4
        ("cron(0 0 5/10 3/4 ? 2026)", "2026-01-01T00:00", ["2026-03-05T00:00", "2026-03-15T00:00"]),
    ],
)
def test_cron_fire_times_in_utc(expression: str, after: str, expected: list[str]) -> None:
    assert fires(expression, after, count=len(expected) or 1) == expected


def test_a_time_the_clocks_skip_does_not_fire_and_the_next_day_does() -> None:
    """New York springs forward on 2026-03-08 at 02:00: 02:30 local does not exist that day."""
    assert fires("cron(30 2 * * ? *)", "2026-03-07T00:00", tz="America/New_York") == [
        "2026-03-07T07:30",  # 02:30 EST
        "2026-03-09T06:30",  # 02:30 EDT: the 8th was skipped
        "2026-03-10T06:30",
    ]


def test_a_time_the_clocks_pass_twice_fires_once() -> None:
    """New York falls back on 2026-11-01 at 02:00: 01:30 local happens twice; it fires the first time."""
    assert fires("cron(30 1 * * ? *)", "2026-10-31T12:00", tz="America/New_York") == [
        "2026-11-01T05:30",  # 01:30 EDT, not 06:30 (01:30 EST) as well
        "2026-11-02T06:30",
        "2026-11-03T06:30",
    ]


def test_a_cron_time_keeps_its_wall_clock_across_the_change() -> None:
    """09:00 in Paris is 08:00 UTC in winter and 07:00 UTC after the clocks go forward (2026-03-29)."""
    assert fires("cron(0 9 * * ? *)", "2026-03-28T00:00", count=2, tz="Europe/Paris") == [
        "2026-03-28T08:00",
        "2026-03-29T07:00",
    ]


def test_a_rate_counts_from_its_start_and_a_day_is_24_hours() -> None:
    assert fires("rate(5 minutes)", "2026-03-01T10:07", start="2026-03-01T10:00") == [
        "2026-03-01T10:10",
        "2026-03-01T10:15",
        "2026-03-01T10:20",
    ]
    assert fires("rate(1 day)", "2026-03-07T00:00", start="2026-03-07T12:00", count=2) == [
        "2026-03-07T12:00",  # its start is its first firing
        "2026-03-08T12:00",
    ]


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("cron(0 12 * * * *)", "exactly one of day-of-month and day-of-week is ?"),
        ("cron(0 12 ? * ? *)", "exactly one of day-of-month and day-of-week is ?"),
        ("cron(0 12 * *)", "six fields"),
        ("cron(60 12 * * ? *)", "minutes: 60 is outside 0-59"),
        ("cron(0 24 * * ? *)", "hours: 24 is outside 0-23"),
        ("cron(0 0 32 * ? *)", "day-of-month: 32"),
        ("cron(0 0 ? * 8 *)", "day-of-week: 8"),
        ("cron(0 0 ? * 3#1,6#3 *)", "one expression only"),
        ("cron(0 0 ? * 2#6 *)", "6 is outside 1-5"),
        ("cron(0 0 1 * ? 2200)", "year: 2200 is outside 1970-2199"),
        ("cron(0 0 5-1 * ? *)", "runs backwards"),
        ("cron(0 0 ? * 2W *)", "W belongs to day-of-month"),
        ("cron(0 0 ? * 1/2 *)", "day-of-week: / belongs to the other fields"),
        ("cron(0 0 ? * MON/2 *)", "day-of-week: / belongs to the other fields"),
        ("cron(0 0 ? * */2 *)", "day-of-week: / belongs to the other fields"),
        ("cron(0 0 ? * XYZ *)", "day-of-week: 'XYZ' is not a value"),
        ("cron(0 0 ? JUNE * *)", "month: 'JUNE' is not a value"),
        ("cron(0 0 # * ? *)", "# belongs to day-of-week"),
        ("cron(0 0 * * ? *) ", "cron(...) or rate(...)"),
        ("cron(0  0 * * ? *)", "six fields"),
        ("rate(90000 days)", "a period is at most"),
        ("rate(99999999999999999999 minutes)", "a period is at most"),
        ("rate(-5 minutes)", "rate(value unit)"),
        ("rate(1.5 hours)", "rate(value unit)"),
        ("rate(0 minutes)", "positive"),
        ("rate(1 minutes)", "singular for 1"),
        ("rate(5 minute)", "singular for 1"),
        ("rate(5 weeks)", "rate(value unit)"),
        ("at(2026-01-01T00:00:00)", "runAt"),
        ("every day", "cron(...) or rate(...)"),
    ],
)
def test_what_eventbridge_refuses_is_refused_with_the_reason(expression: str, why: str) -> None:
    """The rules of EventBridge Scheduler's cron and rate reference. The day-of-week `/` cases seen
    failing with `_week_days`'s `/` check removed; the long rates with `_parse_rate`'s MAX_RATE_SECONDS
    check removed; `WED` (above) with the W check on the raw field."""
    with pytest.raises(InvalidExpressionError, match=why.replace("(", r"\(").replace(")", r"\)")):
        parse(expression)


def test_a_rates_fire_times_end_with_the_last_year_cron_may_name() -> None:
    """rate(50000 days) fires at its start and once 137 years later, then never: asking for more fire
    times once raised OverflowError past the year 9999 and stopped every schedule's tick. Seen failing
    (OverflowError) with `Rate.fires_after`'s loop as `while True`."""
    start = "2026-01-01T00:00"
    assert fires("rate(50000 days)", "2025-12-31T00:00", count=60, start=start) == [
        "2026-01-01T00:00",
        "2162-11-24T00:00",
    ]
    assert fires("rate(84000 days)", "2025-12-31T00:00", count=60, start=start) == [start]


def test_a_time_zone_is_an_iana_name() -> None:
    assert str(zone("Europe/Paris")) == "Europe/Paris"
    with pytest.raises(InvalidExpressionError, match="IANA"):
        zone("Mars/Olympus")
