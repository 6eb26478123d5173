"""One attempt of one job in the worker, and the concerns around it.

- `worker`: `Worker.process`, from a queue message to the job's next state (the attempt's story);
- `limits`: flow control (`Limits`: admit a start before the claim, give it back after);
- `batch_endings`: fan-out children that end in one batch end in one transaction (`BatchEndings`);
- `backoff`: `retry_delay`, the wait before the next attempt;
- `capabilities`: what a job type may do, on the store (`WorkerCapabilities`, `submission_context`);
- `type_config`: a type's declared settings and secrets as its worker holds them (`TypeConfig`);
- `parents`: when a fan-out parent is finished (`finish_if_complete`, `children_of`).
"""
