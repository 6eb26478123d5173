"""Key schema of the DynamoDB tables, shared with the stack so both describe the same tables."""

from typing import Final

# Jobs table: one item per job.
JOBS_PK: Final = "jobId"
# "jobs by status" and the sweeper's "overdue jobs" both read this index. The partition key spreads
# each status over STATUS_SHARDS keys (`pending#3`) so no single key takes every write.
STATUS_INDEX: Final = "byStatus"
STATUS_INDEX_PK: Final = "statusShard"
STATUS_INDEX_SK: Final = "dueAt"  # epoch milliseconds: see docs/design.md for its meaning per status
TTL_ATTRIBUTE: Final = "expiresAt"

# Webhook delivery log: one item per delivery attempt.
DELIVERIES_PK: Final = "fanoutId"
DELIVERIES_SK: Final = "attemptKey"  # "<deliveryId>#<attempt, zero padded>"
ENDPOINT_INDEX: Final = "byEndpoint"
ENDPOINT_INDEX_PK: Final = "endpointId"
ENDPOINT_INDEX_SK: Final = "attemptedAt"
