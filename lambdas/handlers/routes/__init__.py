"""The api's routes by what they do, each a Powertools Router the resolver in `lambdas.handlers.api`
includes: `jobs` (submit and read), `actions` (retry and cancel), `stats`, `webhook_secrets`, `limits`."""
