"""The `job_transition` lines the functions log (docs/internals/README.md, Observability), as a test reads them.

`log_lines` is a fixture (the integration conftest imports it); `transitions` picks one job's lines.
"""

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lambdas.observability import logger

Lines = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def log_lines() -> Iterator[Lines]:
    """The JSON lines the functions log from now on, formatted as Lambda writes them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    level = logger.log_level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(level)


def transitions(lines: list[dict[str, Any]], job_id: str) -> list[tuple[Any, ...]]:
    """Job `job_id`'s transition lines, in order: (message, jobType, from, to, attempt, error)."""
    return [
        tuple(line.get(k) for k in ("message", "jobType", "from", "to", "attempt", "error"))
        for line in lines
        if line.get("event") == "job_transition" and line["message"].startswith(f"job {job_id} ")
    ]
