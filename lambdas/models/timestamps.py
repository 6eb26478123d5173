"""The one time format the API and the stores produce: ISO 8601, UTC, milliseconds, with a `Z`."""

from datetime import UTC, datetime


def iso_time(epoch_seconds: float) -> str:
    """`2026-11-30T03:23:06.123Z` for an epoch time in seconds."""
    stamp = datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="milliseconds")
    return stamp.removesuffix("+00:00") + "Z"
