"""Every attempt that ran reports its duration, including one that used its time budget and continues.

Found by `make mutate` (a mutant of `Worker._continue` no test failed on). The test was first run
against the one-line break its docstring names, seen to fail, then restored.
"""

from typing import Any

import pytest

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import ContinueLater, JobContext, JobType
from tests.integration.test_promises_worker import _emitted
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline


def _continues(_: Any, context: JobContext) -> ContinueLater:
    return ContinueLater({"step": 1})


def test_an_attempt_that_continues_later_reports_its_duration(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    """Broken line: `_continue`'s `MessageResult(..., job.job_type, elapsed)` with `None` for `elapsed`."""
    registry.register(JobType(name="test_continues_once", payload_model=EchoPayload, run=_continues))
    job_id = pipeline.submit("test_continues_once", {})
    capsys.readouterr()

    pipeline.run_worker()

    assert pipeline.job(job_id)["status"] == "pending"
    durations = _emitted(capsys.readouterr().out, config.METRIC_DURATION)
    assert [dimensions["jobType"] for _, dimensions, _ in durations] == ["test_continues_once"]
