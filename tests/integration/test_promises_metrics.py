"""Every attempt that ran reports its duration, including one that used its time budget and continues,
and one that handed its work to child jobs.

Found by `make mutate` (mutants of `Worker._continue` and `Worker._await` no test failed on). Each
test was first run against the one-line break its docstring names, seen to fail, then restored.
"""

from typing import Any

import pytest

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.base import AwaitChildren, ContinueLater, JobContext, JobType
from lambdas.models.job import NewJob
from tests.integration.test_promises_worker import _emitted
from tests.support.job_types import EchoPayload
from tests.support.pipeline import Pipeline


def _continues(_: Any, context: JobContext) -> ContinueLater:
    return ContinueLater({"step": 1})


def _awaits(_: Any, context: JobContext) -> AwaitChildren:
    child = NewJob(
        job_id=f"{context.job_id}-child",
        job_type="test_echo",
        payload={},
        max_attempts=1,
        parent_id=context.job_id,
    )
    context.create_children([child])
    return AwaitChildren(total=1)


@pytest.mark.parametrize(
    ("run", "status"),
    [(_continues, "pending"), (_awaits, "waiting")],
    ids=["continues later", "awaits its children"],
)
def test_an_attempt_that_hands_on_its_work_reports_its_duration(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str], run: Any, status: str
) -> None:
    """Broken lines, each alone: `_continue`'s and `_await`'s `MessageResult(..., job.job_type, elapsed)`
    without `elapsed`."""
    registry.register(JobType(name="test_hands_on", payload_model=EchoPayload, run=run))
    job_id = pipeline.submit("test_hands_on", {})
    capsys.readouterr()

    pipeline.run_worker()

    assert pipeline.job(job_id)["status"] == status
    durations = _emitted(capsys.readouterr().out, config.METRIC_DURATION)
    assert [dimensions["jobType"] for _, dimensions, _ in durations] == ["test_hands_on"]
