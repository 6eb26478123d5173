"""Key schema of the DynamoDB tables, shared with the stack so both describe the same tables."""

from dataclasses import dataclass
from typing import Final

# Jobs table: one item per job.
JOBS_PK: Final = "jobId"
TTL_ATTRIBUTE: Final = "expiresAt"

# Index key attributes of a job item. A job's shard is crc32(jobId) % statusShards, fixed for its life,
# so a fan-out's children spread over every shard; each key below carries it (docs/internals/capacity.md).
STATUS_SHARD: Final = "statusShard"  # "<status>#<shard>"
DUE_AT: Final = "dueAt"  # epoch ms; only on live states (pending, processing, waiting)
STATUS_AT: Final = "statusAt"  # epoch ms the current status was entered
OWNER_STATUS_SHARD: Final = "ownerStatusShard"  # "<owner>#<status>#<shard>"; absent while processing
OWNER_SHARD: Final = "ownerShard"  # "<owner>#<shard>"
CREATED_SHARD: Final = "createdShard"  # "<shard>"
CREATED_AT: Final = "createdAt"  # ISO-8601 UTC: sorts as text


@dataclass(frozen=True)
class Index:
    name: str
    partition_key: str
    sort_key: str
    numeric_sort_key: bool
    # Attributes copied into the index besides the keys: only ones that never change after the put, so
    # an update that moves no key of this index costs it no write.
    include: tuple[str, ...] = ()


# The sweeper's "overdue jobs": sparse, since terminal states drop dueAt.
STATUS_INDEX: Final = Index("byStatus", STATUS_SHARD, DUE_AT, numeric_sort_key=True)
STATUS_INDEX_PK: Final = STATUS_SHARD
STATUS_INDEX_SK: Final = DUE_AT
# The operator's list by status, newest status first.
STATUS_TIME_INDEX: Final = Index(
    "byStatusTime", STATUS_SHARD, STATUS_AT, numeric_sort_key=True, include=("jobType", "owner")
)
# A client's list by status (processing excepted: see OWNER_STATUS_SHARD).
OWNER_STATUS_INDEX: Final = Index(
    "byOwnerStatus", OWNER_STATUS_SHARD, STATUS_AT, numeric_sort_key=True, include=("jobType",)
)
# Lists without a status, newest first: a client's, and everyone's (the operator's).
OWNER_INDEX: Final = Index("byOwner", OWNER_SHARD, CREATED_AT, numeric_sort_key=False, include=("jobType",))
CREATED_INDEX: Final = Index(
    "byCreated", CREATED_SHARD, CREATED_AT, numeric_sort_key=False, include=("jobType",)
)
JOB_INDEXES: Final = (STATUS_INDEX, STATUS_TIME_INDEX, OWNER_STATUS_INDEX, OWNER_INDEX, CREATED_INDEX)

# Webhook delivery log: one item per delivery attempt.
DELIVERIES_PK: Final = "fanoutId"
DELIVERIES_SK: Final = "attemptKey"  # "<deliveryId>#<attempt, zero padded>"

# Webhook signing secrets: one item per client (its API key id), created on first use.
WEBHOOK_SECRETS_PK: Final = "client"

# Flow-control limits: one item per job type's limit and key (lambdas/store/limits.py).
LIMITS_PK: Final = "limit"
LIMITS_SK: Final = "key"
# Recurring schedules: one item per schedule under its owner (the API key id), and a counter item per owner.
SCHEDULES_PK: Final = "owner"
SCHEDULES_SK: Final = "scheduleId"
