"""What a caller asks of the API, scoped by the caller (`lambdas.models.caller.Caller`).

- `submit`: `submit`, a new job; `reads`: `find_job`, `list_jobs`, `list_children`, `list_deliveries`;
- `retry_cancel`: `retry_job`, `cancel_job`, `allowed_actions`; `reschedule`: `reschedule_job`;
  `operations` gathers reads and actions for the routes;
- `schedules`: recurring schedules (write, read, fire); `stats`: `pipeline_stats`;
- `uploads`: presigned uploads and downloads; `webhook_secrets`: each client's signing secrets;
- `paging`: the opaque list cursors every list shares.
"""
