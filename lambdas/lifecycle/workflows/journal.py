"""What a workflow's job record shows of its execution: its steps, and what it waits for.

The durable execution engine keeps the truth (its checkpoints); the journal copies what a caller of
`GET /jobs/{jobId}` needs onto the job, as each operation really happens (never on a replay).
"""

from enum import StrEnum
from typing import Protocol


class WorkflowGone(Exception):
    """The job is no longer this execution's to run (a caller cancelled it): nothing more is written
    and no later step runs."""


class StepStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"  # this attempt failed; the SDK retries it unless it was the last or permanent


class Journal(Protocol):
    def step_started(self, name: str, attempt: int) -> None: ...

    def step_ended(self, name: str, status: StepStatus, error: str | None = None) -> None: ...

    def sleeping(self, name: str, seconds: int) -> None: ...

    def waiting_for_event(self, name: str, callback_id: str, timeout_seconds: int) -> None: ...

    def running(self) -> None:
        """A sleep or a wait for an event is over."""
        ...
