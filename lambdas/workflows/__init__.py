"""Workflows: job types whose `run(payload, flow)` runs on Lambda's durable execution engine.

`Flow` is what a workflow type uses (step, sleep, wait_for_event); `run_workflow` is one job's
execution, given a `WorkflowRuntime` (offload's side: the job, its journal, its end).
"""

from lambdas.workflows.execution import Begun, WorkflowGone, WorkflowRuntime, run_workflow
from lambdas.workflows.flow import Flow
from lambdas.workflows.journal import Journal, StepStatus, WaitKind

__all__ = [
    "Begun",
    "Flow",
    "Journal",
    "StepStatus",
    "WaitKind",
    "WorkflowGone",
    "WorkflowRuntime",
    "run_workflow",
]
