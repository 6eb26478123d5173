"""Workflows: job types whose `run(payload, flow)` runs on Lambda's durable execution engine.

- `flow`: `DurableFlow`, the `lambdas.jobs.base.Flow` a workflow type uses (step, sleep, wait_for_event);
- `execution`: one job's execution (`run_workflow`), given offload's side of it (`WorkflowRuntime`);
- `journal`: what the job's record shows of it (steps, waits); `runtime`: both on the store;
- `start`: the worker hands a claimed job over and starts its execution;
- `events`, `engine`: a caller's event and cancel, and the engine calls they make.

This module imports none of them: the API and the worker load the durable SDK only when a workflow needs it.
"""
