"""Ops jobs: the lifecycle's own job type for work a caller started that is too big for one call.

- `job`: the type itself (`OPS_TYPE`, `OpsPayload`, `ActionCounts`) and its one page loop (`run_pages`);
- `bulk`: an operator's retry or cancel of every job a filter matches (`start_bulk`);
- `fan_out`: a caller's retry or cancel of a fan-out's children (`FanOutChildren`, `cancel_parent`).
"""
