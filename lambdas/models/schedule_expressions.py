"""EventBridge Scheduler's recurring expressions, `cron(...)` and `rate(...)`, and when they fire next.

The one implementation of next-fire-time: the API answers a schedule's next fire times from it, and the
local runtime fires the stored schedules by it (AWS fires them itself, by the same rules). Pure Python.

The rules, as EventBridge Scheduler states them (anything else is refused with the reason):
- `cron(minutes hours day-of-month month day-of-week year)`: minutes 0-59 and hours 0-23 (`, - * /`),
  day-of-month 1-31 (`, - * ? / L W`), month 1-12 or JAN-DEC (`, - * /`), day-of-week 1-7 or SUN-SAT with
  1 = Sunday (`, - * ? L #`: no `/`; a day's name may stand wherever its number may, `WED` included, whose
  W is no weekday wildcard), year 1970-2199 (`, - * /`). Exactly one of day-of-month and day-of-week is `?`.
  `L` in day-of-month is the month's last day; `nW` the weekday nearest day n, in the same month; `L` in
  day-of-week is Saturday, `nL` the month's last day n; `n#k` the k-th day n of the month, and then the
  only expression of that field.
- `rate(value unit)`: a positive whole value, unit minute(s), hour(s) or day(s), singular for 1. It fires
  at its start and every period after; a day is 24 hours whatever the clocks do. Its fire times end with
  the year 2199 as cron's do, and a period longer than the years cron may name (1970-2199,
  MAX_RATE_SECONDS) is refused: the one bound that keeps every fire time a date Python can compute.
- A cron expression is read in the schedule's time zone (an IANA name). When the clocks go forward, a
  time that does not exist is skipped; when they go back, a time that happens twice fires once (the
  first time).
"""

import calendar
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

MIN_YEAR = 1970
MAX_YEAR = 2199
_MONTHS = {name.upper(): n for n, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_DAY_NAME = re.compile("|".join(_DAYS))
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86_400}
# Fire times end with the last year cron may name, rate's too: the one bound that keeps every date
# computable (year 9999 is datetime's).
_END = datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC)
# The longest rate period: the span of the years a cron expression may name.
MAX_RATE_SECONDS = int((datetime(MAX_YEAR + 1, 1, 1) - datetime(MIN_YEAR, 1, 1)).total_seconds())


class InvalidExpressionError(ValueError):
    """An expression or time zone EventBridge Scheduler would refuse; the message says why."""


@dataclass(frozen=True)
class Rate:
    seconds: int

    def fires_after(self, after: datetime, start: datetime) -> Iterator[datetime]:
        """Fire times later than `after`, counted from `start` (the schedule's first firing)."""
        period = timedelta(seconds=self.seconds)
        if start >= _END:
            return
        if after < start:
            yield start
            after = start
        steps = (after - start) // period + 1
        while (fire := start + steps * period) < _END:
            yield fire
            steps += 1


@dataclass(frozen=True)
class _Days:
    """The day-of-month or day-of-week field: plain values, or one of L, nW, nL, n#k."""

    values: frozenset[int] = frozenset()
    last: bool = False  # day-of-month L
    nearest_weekday: int = 0  # day-of-month nW
    last_weekday: int = 0  # day-of-week nL (and L: Saturday)
    nth: tuple[int, int] = (0, 0)  # day-of-week n#k
    any: bool = False  # ?

    def matches_month_day(self, day: date) -> bool:
        last_day = calendar.monthrange(day.year, day.month)[1]
        if self.last:
            return day.day == last_day
        if self.nearest_weekday:
            return day.day == _nearest_weekday(day.year, day.month, min(self.nearest_weekday, last_day))
        return day.day in self.values

    def matches_week_day(self, day: date) -> bool:
        weekday = _weekday(day)
        last_day = calendar.monthrange(day.year, day.month)[1]
        if self.last_weekday:
            return weekday == self.last_weekday and day.day + 7 > last_day
        if self.nth[0]:
            return weekday == self.nth[0] and (day.day - 1) // 7 + 1 == self.nth[1]
        return weekday in self.values


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    month_days: _Days
    months: frozenset[int]
    week_days: _Days
    years: frozenset[int]

    def _days(self, after: date) -> Iterator[date]:
        for year in sorted(y for y in self.years if y >= after.year):
            for month in sorted(self.months):
                if (year, month) < (after.year, after.month):
                    continue
                first = after.day if (year, month) == (after.year, after.month) else 1
                for day_number in range(first, calendar.monthrange(year, month)[1] + 1):
                    day = date(year, month, day_number)
                    if self._matches(day):
                        yield day

    def _matches(self, day: date) -> bool:
        if self.week_days.any:
            return self.month_days.matches_month_day(day)
        return self.week_days.matches_week_day(day)

    def fires_after(self, after: datetime, zone: ZoneInfo) -> Iterator[datetime]:
        """Fire times (UTC) later than `after`, the expression read in `zone`."""
        local_start = after.astimezone(zone)
        for day in self._days(local_start.date()):
            for hour in sorted(self.hours):
                for minute in sorted(self.minutes):
                    fire = _resolve(datetime(day.year, day.month, day.day, hour, minute), zone)
                    if fire is not None and fire > after:
                        yield fire


Expression = Cron | Rate


def parse(text: str) -> Expression:
    """The expression `text` states; InvalidExpressionError saying why EventBridge would refuse it."""
    if text.startswith("rate("):
        return _parse_rate(text)
    if text.startswith("cron(") and text.endswith(")"):
        return _parse_cron(text[5:-1])
    if text.startswith("at("):
        raise InvalidExpressionError("a one-time at() schedule is a job with runAt: POST /jobs")
    raise InvalidExpressionError("an expression is cron(...) or rate(...)")


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; InvalidExpressionError when there is none of that name."""
    if name not in _zone_names():
        raise InvalidExpressionError(f"{name!r} is not an IANA time zone name (e.g. Europe/Paris, UTC)")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidExpressionError(f"{name!r} is not an IANA time zone name") from None


def next_fire_times(
    expression: Expression, zone_name: str, after: datetime, start: datetime, count: int
) -> list[datetime]:
    """The next `count` fire times (UTC) later than `after`; `start` anchors a rate (its first firing)."""
    times = (
        expression.fires_after(after, start)
        if isinstance(expression, Rate)
        else expression.fires_after(after, zone(zone_name))
    )
    found: list[datetime] = []
    for fire in times:
        found.append(fire)
        if len(found) == count:
            break
    return found


def _zone_names() -> set[str]:
    return available_timezones() | {"UTC"}


def _parse_rate(text: str) -> Rate:
    match = _RATE.fullmatch(text)
    if match is None:
        raise InvalidExpressionError("rate(value unit): a whole value, unit minute(s), hour(s) or day(s)")
    value, unit = int(match[1]), match[2]
    if value < 1:
        raise InvalidExpressionError("a rate's value is positive")
    if (value == 1) != (not unit.endswith("s")):
        raise InvalidExpressionError(f"rate({value} {unit}): the unit is singular for 1, plural otherwise")
    seconds = value * _UNIT_SECONDS[unit.rstrip("s")]
    if seconds > MAX_RATE_SECONDS:
        raise InvalidExpressionError(
            f"rate({value} {unit}): a period is at most {MAX_RATE_SECONDS // 86_400} days "
            f"(the years {MIN_YEAR}-{MAX_YEAR})"
        )
    return Rate(seconds)


def _parse_cron(body: str) -> Cron:
    fields = body.split(" ")
    if len(fields) != 6 or not all(fields):
        raise InvalidExpressionError(
            "cron() has six fields, one space apart: minutes hours day-of-month month day-of-week year"
        )
    minutes, hours, month_day, month, week_day, year = fields
    if (month_day == "?") == (week_day == "?"):
        raise InvalidExpressionError("exactly one of day-of-month and day-of-week is ?")
    return Cron(
        minutes=_values(minutes, 0, 59, "minutes"),
        hours=_values(hours, 0, 23, "hours"),
        month_days=_month_days(month_day),
        months=_values(month, 1, 12, "month", _MONTHS),
        week_days=_week_days(week_day),
        years=_values(year, MIN_YEAR, MAX_YEAR, "year"),
    )


def _number(text: str, low: int, high: int, field: str, names: dict[str, int] | None = None) -> int:
    if names and text.upper() in names:
        return names[text.upper()]
    if not text.isdigit():
        raise InvalidExpressionError(f"{field}: {text!r} is not a value of this field")
    value = int(text)
    if not low <= value <= high:
        raise InvalidExpressionError(f"{field}: {value} is outside {low}-{high}")
    return value


def _values(
    text: str, low: int, high: int, field: str, names: dict[str, int] | None = None
) -> frozenset[int]:
    """A field of `, - * /` parts as the set of values it takes."""
    found: set[int] = set()
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = _number(step_text, 1, high - low + 1 if high > low else 1, field) if slash else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            start, _, end = base.partition("-")
            first, last = _number(start, low, high, field, names), _number(end, low, high, field, names)
            if first > last:
                raise InvalidExpressionError(f"{field}: the range {base} runs backwards")
        else:
            first = _number(base, low, high, field, names)
            last = high if slash else first
        found.update(range(first, last + 1, step))
    return frozenset(found)


def _month_days(text: str) -> _Days:
    if text == "?":
        return _Days(any=True)
    if text == "L":
        return _Days(last=True)
    if text.endswith("W"):
        return _Days(nearest_weekday=_number(text[:-1], 1, 31, "day-of-month"))
    if "#" in text:
        raise InvalidExpressionError("day-of-month: # belongs to day-of-week")
    return _Days(values=_values(text, 1, 31, "day-of-month"))


def _week_days(text: str) -> _Days:
    if text == "?":
        return _Days(any=True)
    if text == "L":
        return _Days(values=frozenset({_DAYS["SAT"]}))  # the week's last day
    if text.endswith("L"):
        return _Days(last_weekday=_number(text[:-1], 1, 7, "day-of-week", _DAYS))
    if "#" in text:
        if "," in text:
            raise InvalidExpressionError("day-of-week: with #, the field holds one expression only")
        day, _, nth = text.partition("#")
        return _Days(nth=(_number(day, 1, 7, "day-of-week", _DAYS), _number(nth, 1, 5, "day-of-week #")))
    if "/" in text:
        raise InvalidExpressionError("day-of-week: / belongs to the other fields, not this one")
    if "W" in _DAY_NAME.sub("", text.upper()):  # the W of WED is a name's, not the wildcard
        raise InvalidExpressionError("day-of-week: W belongs to day-of-month")
    return _Days(values=_values(text, 1, 7, "day-of-week", _DAYS))


def _weekday(day: date) -> int:
    """1 = Sunday .. 7 = Saturday, as cron counts."""
    return (day.weekday() + 1) % 7 + 1


def _nearest_weekday(year: int, month: int, day_number: int) -> int:
    """The Monday-to-Friday day nearest `day_number`, without leaving the month."""
    day = date(year, month, day_number)
    last = calendar.monthrange(year, month)[1]
    if day.weekday() == 5:  # Saturday: the Friday before, or the Monday after on the 1st
        return day_number - 1 if day_number > 1 else day_number + 2
    if day.weekday() == 6:  # Sunday: the Monday after, or the Friday before on the last day
        return day_number + 1 if day_number < last else day_number - 2
    return day_number


def _resolve(local: datetime, zone: ZoneInfo) -> datetime | None:
    """The UTC instant of a wall-clock time in `zone`: None for a time the clocks skip; the first of two
    for a time they pass twice."""
    first = local.replace(tzinfo=zone, fold=0)
    instant = first.astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) != local:
        return None  # in the gap: the clocks went forward over it
    return instant
