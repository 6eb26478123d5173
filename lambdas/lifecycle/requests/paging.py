"""Opaque list cursors: base64url JSON a client hands back unchanged, checked before any query uses it.

A cursor names the query it continues (so it cannot be replayed against another list) and where each
shard stands. Anything that does not decode to exactly that shape is InvalidCursorError (400), and
so is a value DynamoDB would refuse as a start key where moto takes it (a number of more than 38
digits: a ValidationException, a 500, in AWS).
"""

import base64
import binascii
import hashlib
import json
from typing import Any

from lambdas.lifecycle.errors import InvalidCursorError
from lambdas.store.listing import END, Position

_MAX_CURSOR_CHARS = 16_384
# DynamoDB numbers hold at most 38 significant digits; sort keys here are epoch milliseconds (>= 0).
_NUMBER_CEILING = 10**38


def query_tag(*parts: object) -> str:
    """A short fingerprint of what a list asks for, kept in its cursors."""
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:16]


def encode(tag: str, state: Any) -> str:
    raw = json.dumps({"q": tag, "s": state}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(tag: str, cursor: str | None) -> Any:
    """The state a cursor carries (None without a cursor); InvalidCursorError if it is not ours."""
    if cursor is None:
        return None
    if len(cursor) > _MAX_CURSOR_CHARS:
        raise InvalidCursorError("the cursor is too long")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise InvalidCursorError("the cursor is not one this API returned") from None
    if not isinstance(data, dict) or data.get("q") != tag or "s" not in data:
        raise InvalidCursorError("the cursor belongs to another list or query")
    return data["s"]


def shard_positions(state: Any, shards: int, numeric: bool) -> dict[int, Position | str]:
    """Shard positions from a cursor's state: {"<shard>": "end" | [sortKey, jobId]}."""
    if state is None:
        return {}
    if not isinstance(state, dict):
        raise InvalidCursorError("the cursor is malformed")
    positions: dict[int, Position | str] = {}
    for name, at in state.items():
        if not (isinstance(name, str) and name.isdigit() and int(name) < shards):
            raise InvalidCursorError("the cursor names a shard this list does not have")
        positions[int(name)] = _position(at, numeric)
    return positions


def _position(at: Any, numeric: bool) -> Position | str:
    if at == END:
        return END
    if not (isinstance(at, list) and len(at) == 2 and isinstance(at[1], str) and 0 < len(at[1]) <= 128):
        raise InvalidCursorError("the cursor is malformed")
    sort, job_id = at
    if numeric and type(sort) is int and 0 <= sort < _NUMBER_CEILING:
        return sort, job_id
    if not numeric and type(sort) is str and 0 < len(sort) <= 64:
        return sort, job_id
    raise InvalidCursorError("the cursor is malformed")


def offset(state: Any, maximum: int) -> int:
    """A plain offset cursor's state (children pages)."""
    if state is None:
        return 0
    if type(state) is not int or not 0 <= state <= maximum:
        raise InvalidCursorError("the cursor is malformed")
    return state
