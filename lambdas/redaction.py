"""Secrets never reach what a client or an operator reads: each secret value a process holds is replaced
by `[redacted]` in a job's `lastError` and result, and in every log line the process writes.

A process remembers each secret value as it reads it (`remember`): a job type's declared secrets
(`context.secret`), a client's webhook signing secrets, and in the api function the caller's API key. A
job's error text and result are redacted before they are written (the worker's attempt), so the API, the
console and the dead-letter alert, which show them, show them redacted; every log line is redacted as it
is formatted (`RedactingFormatter`, the Powertools logger's formatter).

A value is also found in the forms it takes in a URL (percent-encoded, `+` for spaces), so a failed
HTTP call with the token in its query string is redacted too. Values shorter than `MIN_CHARS` are not
remembered: replacing every `abc` in every line would hide more than it protects, and no credential
this stack makes or a third party issues is that short.
"""

import re
import threading
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, quote_plus

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from lambdas.config import WEBHOOK_SECRET_PREFIX

REDACTED: Final = "[redacted]"
MIN_CHARS: Final = 8


class _Remembered:
    """The values, and one pattern of them all (longest first, so a value inside another is not cut)."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        if len(value) < MIN_CHARS:
            return
        forms = {value, quote(value, safe=""), quote_plus(value, safe="")}
        if value.startswith(WEBHOOK_SECRET_PREFIX):  # the key of a `whsec_` secret, alone, is as secret
            forms.add(value.removeprefix(WEBHOOK_SECRET_PREFIX))
        with self._lock:
            if forms <= self._values:
                return
            self._values |= forms
            self._pattern = re.compile(_trie_pattern(self._values))

    @property
    def any(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str) -> str:
        pattern = self._pattern
        return text if pattern is None else pattern.sub(REDACTED, text)

    def forget(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None


def _trie_pattern(values: set[str]) -> str:
    """One pattern matching any of `values`, longest first, written as a trie (`ab(?:c|d)` for `abc`,
    `abd`): the regex engine then follows one branch per character instead of trying every value at
    every position, so a line costs about the same with a thousand values as with ten."""
    trie: dict[str, Any] = {}
    for value in values:
        node = trie
        for char in value:
            node = node.setdefault(char, {})
        node[""] = {}  # a value ends here

    def pattern(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # Longest first: a value that ends here matches only when no longer one continues.
        return f"(?:{body})?" if ends else body

    return pattern(trie)


_remembered = _Remembered()


def remember(*values: str) -> None:
    """Secret values this process holds from now on: they are redacted wherever `redact` runs."""
    for value in values:
        if isinstance(value, str):
            _remembered.add(value)


def redact(text: str) -> str:
    return _remembered.redact(text)


def redact_value(value: Any) -> Any:
    """A JSON-like value (a job's result) with every string in it redacted, keys included."""
    if not _remembered.any:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


def forget() -> None:
    """Tests: a fresh process's memory."""
    _remembered.forget()


class RedactingFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter, each line redacted once formatted (message, extra keys, traceback)."""

    def format(self, record: Any) -> str:
        return redact(super().format(record))
