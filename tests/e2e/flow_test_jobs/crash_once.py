"""`crash_once`: a step with a side effect, then a step whose first attempt kills its own function
process, as a crash or an out-of-memory kill would. The side effect is a line in a file of the test's."""

import os
import signal
from pathlib import Path

from pydantic import BaseModel, Field

from lambdas.jobs.base import Flow, JobType


class CrashOncePayload(BaseModel):
    folder: str = Field(min_length=1, description="A folder on this machine, the test's own.")


def _effect(folder: str) -> int:
    with (Path(folder) / "effects").open("a") as effects:
        effects.write("effect\n")
    return 1


def _crash_once(folder: str) -> str:
    marker = Path(folder) / "crashed"
    if not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def run(payload: CrashOncePayload, flow: Flow) -> dict[str, object]:
    effect = flow.step("effect", _effect, payload.folder)
    after = flow.step("crash", _crash_once, payload.folder)
    return {"effect": effect, "after": after}


JOB_TYPE = JobType(name="crash_once", payload_model=CrashOncePayload, run=run, workflow=True)
