"""The api's routes by what they do, each a Powertools Router the resolver in `lambdas.handlers.api`
includes: `jobs` (submit and read), `job_changes` (retry, cancel and reschedule one job; bulk retry and
cancel), `stats`, `webhook_secrets`, `schedules`, `limits`. What they work with (the caller, the store,
the queue, ...) each route declares and `rest.services` provides."""
