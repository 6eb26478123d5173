"""Names and tunables shared by the functions, the stack (`infra/`) and the local runtime.

Everything here is a plain constant so that importing it costs nothing at cold start. The stack turns
these into resource properties and environment variables; the functions read the environment through
the settings in `lambdas.models.settings`. Bounds that both the synth-time context checks
(`infra/settings.py`) and the run-time settings enforce are defined here once.
"""

from enum import StrEnum
from typing import Final

# A webhook signing secret: this prefix, then base64 (the Standard Webhooks format).
WEBHOOK_SECRET_PREFIX: Final = "whsec_"
SERVICE_NAME: Final = "offload"
METRICS_NAMESPACE: Final = "Offload"

# Environment variable names: the contract between the stack and the functions.
ENV_JOBS_TABLE: Final = "JOBS_TABLE_NAME"
ENV_DELIVERIES_TABLE: Final = "DELIVERIES_TABLE_NAME"
ENV_QUEUE_URL: Final = "QUEUE_URL"
ENV_DLQ_URL: Final = "DLQ_URL"
# The alias of the durable function that runs this worker group's workflow types (none: it has none).
ENV_WORKFLOW_FUNCTION: Final = "WORKFLOW_FUNCTION"
# How long a workflow's durable execution may run in all, sleeps and waits included: Lambda's most, a
# year (durableConfig executionTimeout); and how long the engine keeps a finished one's history.
WORKFLOW_EXECUTION_TIMEOUT_SECONDS: Final = 366 * 24 * 3600
WORKFLOW_RETENTION_DAYS: Final = 14
ENV_ALERTS_TOPIC_ARN: Final = "ALERTS_TOPIC_ARN"
ENV_UPLOADS_BUCKET: Final = "UPLOADS_BUCKET_NAME"
ENV_WEBHOOK_SECRET_ARN: Final = "WEBHOOK_SECRET_ARN"
ENV_WEBHOOK_SECRETS_TABLE: Final = "WEBHOOK_SECRETS_TABLE_NAME"
# An upgraded stack: a client's first signing secret is the stack-wide one above (its receivers hold it).
ENV_WEBHOOK_SECRETS_START_SHARED: Final = "WEBHOOK_SECRETS_START_SHARED"
ENV_SENDER_EMAIL: Final = "SENDER_EMAIL"
ENV_BACKOFF_BASE_SECONDS: Final = "BACKOFF_BASE_SECONDS"
ENV_BACKOFF_CAP_SECONDS: Final = "BACKOFF_CAP_SECONDS"
ENV_LEASE_SECONDS: Final = "LEASE_SECONDS"
ENV_RECOVERY_GRACE_SECONDS: Final = "RECOVERY_GRACE_SECONDS"
ENV_ALERT_WINDOW_SECONDS: Final = "ALERT_WINDOW_SECONDS"
ENV_STATUS_SHARDS: Final = "STATUS_SHARDS"
ENV_FINISHED_TTL_DAYS: Final = "FINISHED_TTL_DAYS"
ENV_WORKER_CONCURRENCY: Final = "WORKER_CONCURRENCY"
ENV_ALLOW_HTTP_WEBHOOKS: Final = "ALLOW_HTTP_WEBHOOKS"
# Local runtime only: lets webhooks reach 127.0.0.0/8 and ::1 (and nothing else that is not public).
ENV_WEBHOOK_ALLOW_LOOPBACK: Final = "WEBHOOK_ALLOW_LOOPBACK"
ENV_THUMBNAIL_SIZES: Final = "THUMBNAIL_SIZES"
ENV_MAX_FILE_BYTES: Final = "MAX_FILE_BYTES"
# Set by Lambda itself in every function (and by the local runtime); the stack never writes it.
ENV_FUNCTION_MEMORY_MB: Final = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
# The operator API key's id (API Gateway's, never its value): the one caller that sees every job.
ENV_OPERATOR_KEY_ID: Final = "OPERATOR_KEY_ID"
# Flow control: the limits table, the stack's limit overrides (JSON keyed by job type, from CDK context
# `jobLimits`, `sesPerSecond` and `webhookHostConcurrency`) and the longest a job may wait in all.
ENV_LIMITS_TABLE: Final = "LIMITS_TABLE_NAME"
ENV_JOB_LIMITS: Final = "JOB_LIMITS"
ENV_LIMIT_MAX_WAIT_SECONDS: Final = "LIMIT_MAX_WAIT_SECONDS"
ENV_SCHEDULE_HORIZON_SECONDS: Final = "SCHEDULE_HORIZON_SECONDS"
ENV_SCHEDULES_TABLE: Final = "SCHEDULES_TABLE_NAME"
ENV_MAX_SCHEDULES_PER_CLIENT: Final = "MAX_SCHEDULES_PER_CLIENT"
ENV_MAX_FIRINGS_PER_CLIENT_DAY: Final = "MAX_FIRINGS_PER_CLIENT_DAY"
# Job types (lambdas/jobs/packages.py): the packages a function registers besides the built-in one, the
# queue of each type that runs in a function of its own (JSON: type -> URL), the settings of the types a
# worker runs (JSON: type -> object) and the secrets they declared (JSON: name -> ARN).
ENV_JOB_PACKAGES: Final = "JOB_PACKAGES"
ENV_JOB_QUEUE_URLS: Final = "JOB_QUEUE_URLS"
ENV_HIGH_QUEUE_URLS: Final = "HIGH_QUEUE_URLS"
# Each job queue's dead-letter queue (JSON: queue URL -> URL): where the recovery sweep sends the letter
# of a job it ends dead, so the dead-letter function alerts for it as for any dead job.
ENV_DEAD_LETTER_QUEUE_URLS: Final = "DEAD_LETTER_QUEUE_URLS"
# A group's high queue's mapping: small batches, no batching window, a few invocations of its own.
HIGH_QUEUE_BATCH_SIZE: Final = 10
HIGH_QUEUE_MAX_CONCURRENCY: Final = 2
ENV_JOB_SETTINGS: Final = "JOB_SETTINGS"
ENV_JOB_SECRETS: Final = "JOB_SECRETS"
# The stack's overrides of job types' retry policies (CDK context `retryPolicies`; JSON: type -> fields).
ENV_RETRY_POLICIES: Final = "RETRY_POLICIES"
# IAM mode (CDK context auth=iam): the IAM roles of the clients and operators, as JSON (`lambdas.models.iam`).
ENV_IAM_CALLERS: Final = "IAM_CALLERS"

# Lifecycle tunables (defaults; the stack may override them from CDK context).
DEFAULT_MAX_ATTEMPTS: Final = 5
MAX_ATTEMPTS_LIMIT: Final = 10
MAX_DELAY_SECONDS: Final = 900  # SQS DelaySeconds ceiling
# A job may be asked to start this far ahead (`runAt`, `delaySeconds`).
MAX_SCHEDULE_AHEAD_SECONDS: Final = 365 * 24 * 60 * 60
# A job due further ahead than this is `scheduled` (no message yet); the sweep hands it to SQS with the
# delay left once it is due within it. AWS's limit; tests lower it (context key scheduleHorizonSeconds).
SCHEDULE_HORIZON_SECONDS: Final = MAX_DELAY_SECONDS
# A message may claim a job with a start time this early (SQS's delays are not to the millisecond).
RUN_AT_TOLERANCE_SECONDS: Final = 1
# Recurring schedules (POST /schedules): how many one client may keep (context key maxSchedulesPerClient).
MAX_SCHEDULES_PER_CLIENT: Final = 100
# The jobs one client's schedules may create in a UTC day (context key maxFiringsPerClientDay): as many as
# its key may submit a day through the API by default (apiQuotaPerDay). Past it, firings are skipped with
# the reason on the schedule.
MAX_FIRINGS_PER_CLIENT_DAY: Final = 100_000
# A schedule's job payload as stored (compact JSON, UTF-8): well below the request body's limit, so the
# tick that fires a schedule, and a page of a client's schedules, stay small whatever clients store.
MAX_SCHEDULE_PAYLOAD_BYTES: Final = 64 * 1024
# SQS caps a message's visibility timeout at 12 hours: the longest retry delay a message can wait out.
SQS_MAX_VISIBILITY_SECONDS: Final = 12 * 60 * 60
BACKOFF_BASE_SECONDS: Final = 10
BACKOFF_CAP_SECONDS: Final = 300
MIN_BACKOFF_SECONDS: Final = 1  # the shortest base delay: below a second, backoff stops meaning anything
# A job type's retry policy (`lambdas.models.retry.RetryPolicy`) may ask for this many attempts, over a
# window this long at most: a week outlasts any outage worth waiting for, and keeps a dead job's
# alert within the week its client can still act on.
MAX_POLICY_ATTEMPTS: Final = 50
MAX_RETRY_WINDOW_SECONDS: Final = 7 * 24 * 60 * 60
# Flow control defaults: SES's sending rate of a new production account (per account, so a context key:
# sesPerSecond), and the most deliveries at once to one webhook host (webhookHostConcurrency).
SES_PER_SECOND: Final = 14
WEBHOOK_HOST_CONCURRENCY: Final = 10
# A job waiting on limits (or its own RetryLater) for longer than this in all is declared dead.
LIMIT_MAX_WAIT_SECONDS: Final = 7 * 24 * 60 * 60
# The longest DelaySeconds SQS takes: a longer wait is a chain of such messages.
SQS_MAX_DELAY_SECONDS: Final = 900
# The longest Retry-After a webhook receiver may ask for that a retry honours (a floor on its backoff).
MAX_RETRY_AFTER_SECONDS: Final = 3600
# A client's rotated-out webhook signing secret still signs (beside the new one) for this long.
WEBHOOK_SECRET_OVERLAP_SECONDS: Final = 24 * 60 * 60
MAX_BODY_BYTES: Final = 256 * 1024
# API Gateway's stage: the first segment of every route's path (`/v1/jobs`), so it versions the API.
API_STAGE: Final = "v1"
# Arrays and objects nested deeper than this in a request body are refused (400 nesting_too_deep):
# far beyond any real payload, far below where JSON parsing and pydantic serialisation give up.
MAX_JSON_DEPTH: Final = 32
# Index partitions per status (and per owner): each key takes about 2 writes per job passing through,
# so 32 keeps a key near 625 writes/s at 10,000 jobs/s, under a partition's 1,000 (docs/internals/capacity.md).
STATUS_SHARDS: Final = 32
MAX_STATUS_SHARDS: Final = 64  # a list page queries every shard: more makes pages slower
# What one list page may read, whatever the filters leave (so no caller pays for reading past what
# another's jobs fill an index with): one Query per shard plus PAGE_EXTRA_QUERIES, at most
# PAGE_READ_ITEMS index entries. A page that stops on its budget answers what it found (maybe nothing)
# and a cursor to read on.
PAGE_EXTRA_QUERIES: Final = 32
PAGE_READ_ITEMS: Final = 500
# A fan-out's children are read by BatchGetItem (100 keys a call, DynamoDB's ceiling), at most
# CHILD_PAGE_BATCHES calls per children page.
CHILD_READ_BATCH: Final = 100
CHILD_PAGE_BATCHES: Final = 5
FINISHED_TTL_DAYS: Final = 30

# Functions and their event sources.
WORKER_TIMEOUT_SECONDS: Final = 60
# A lease outlives the worker's own timeout, so only a worker that is really gone loses its job.
LEASE_MARGIN_SECONDS: Final = 30
LEASE_SECONDS: Final = WORKER_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS
# AWS guidance: the source queue's visibility timeout is at least six times the function timeout.
VISIBILITY_TIMEOUT_FACTOR: Final = 6
# What a job type may ask of the function that runs it (`WorkerFunction`): Lambda's own bounds.
LAMBDA_MAX_TIMEOUT_SECONDS: Final = 900
LAMBDA_MIN_MEMORY_MB: Final = 128
LAMBDA_MAX_MEMORY_MB: Final = 10240
# Installed distributions name their packages of job types under this entry-point group.
JOB_TYPES_ENTRY_POINT_GROUP: Final = "offload.job_types"
WORKER_BATCH_SIZE: Final = 10
WORKER_BATCHING_WINDOW_SECONDS: Final = 5
WORKER_MAX_CONCURRENCY: Final = 10
WORKER_CONCURRENCY: Final = 10  # messages of one batch processed at once inside one invocation
# How long a fan-out child that ended done waits for its siblings in the same batch, to be written with
# them in one transaction (lambdas/lifecycle/attempt/batch_endings.py): this, or as long as its batch has run so
# far, but never more than the most (nor a tenth of the lease).
ENDING_TOGETHER_WAIT_SECONDS: Final = 1.0
ENDING_TOGETHER_MAX_WAIT_SECONDS: Final = 5.0
WORKER_MEMORY_MB: Final = 1024  # image work (Pillow) is CPU bound and Lambda CPU scales with memory
DLQ_BATCH_SIZE: Final = 5
DLQ_BATCHING_WINDOW_SECONDS: Final = 30
# SQS redrive is only a backstop: the job record decides when a job is exhausted. The headroom covers
# throttled receives (AWS advises at least 5) on top of the most attempts one message carries (a retry
# after the MAX_ATTEMPTS_LIMIT-th attempt, or beyond SQS's longest delay, takes a fresh message).
MAX_RECEIVE_COUNT: Final = MAX_ATTEMPTS_LIMIT + 5
MAIN_QUEUE_RETENTION_DAYS: Final = 4
DLQ_RETENTION_DAYS: Final = 14
RECOVERY_RATE_MINUTES: Final = 5
RECOVERY_TIMEOUT_SECONDS: Final = 120
SCHEDULES_TIMEOUT_SECONDS: Final = 30
# A pending job whose message should have been consumed this long ago is treated as having lost it.
RECOVERY_GRACE_SECONDS: Final = 300
# Dead jobs of one (type, owner) alert at most once per window (lambdas/lifecycle/sweeps/dead_letter.py).
ALERT_WINDOW_SECONDS: Final = 300
MAX_ALERT_WINDOW_SECONDS: Final = 86_400

# Uploads and file processing.
UPLOAD_URL_EXPIRES_SECONDS: Final = 900
# GET /jobs/{jobId} signs a fresh download URL for each file a job wrote, on every read: a URL signed by the
# worker would die with the worker's temporary credentials, well before anyone asks for the result.
DOWNLOAD_URL_EXPIRES_SECONDS: Final = 900
# Key prefixes in the uploads bucket: the stack scopes IAM grants and lifecycle rules to them.
UPLOADS_PREFIX: Final = "uploads/"  # files clients send through presigned POSTs
RESULTS_PREFIX: Final = "results/"  # files jobs produce (thumbnails)
MAX_FILE_BYTES: Final = 50 * 1024 * 1024
THUMBNAIL_SIZES: Final = (128, 512)
# Bounds of one thumbnail size (pixels, long side): checked at synth (CDK context) and at run time alike.
MIN_THUMBNAIL_PIXELS: Final = 16
MAX_THUMBNAIL_PIXELS: Final = 4096
# Of the worker's memory, what decoded images may not use: the runtime, the libraries, and the other
# jobs of the batch (their downloads stream to disk). The rest is shared by the images being decoded.
DECODE_RESERVED_MB: Final = 256

# Metrics (EMF, namespace METRICS_NAMESPACE, dimension service=SERVICE_NAME). The stack alarms on METRIC_DEAD.
METRIC_SUBMITTED: Final = "JobSubmitted"
METRIC_SUCCEEDED: Final = "JobSucceeded"
METRIC_RETRIED: Final = "JobRetried"
METRIC_DEAD: Final = "JobDead"
METRIC_DURATION: Final = "JobDuration"  # milliseconds, with a jobType dimension as well
# A job that went back to wait (over its limit, or RetryLater): a count, with a jobType dimension as well.
METRIC_DEFERRED: Final = "JobDeferred"
METRIC_RECOVERED: Final = "JobRecovered"
# One per finished recovery sweep: the stack alarms when none arrives for three scheduled periods.
METRIC_SWEEPS: Final = "RecoverySweeps"

STACK_ID: Final = "Offload"
# CDK context `stage` (dev, staging, prod) puts its name in the stack's: `Offload-staging`. Every
# physical name, alarm, dashboard and the functions' metrics namespace derive from the stack's name, so
# stages deploy side by side in one account and region. No stage: today's names.
CONTEXT_STAGE: Final = "stage"
STAGE_PATTERN: Final = r"[a-z][a-z0-9]{0,15}"


def stack_name(stage: str | None) -> str:
    return f"{STACK_ID}-{stage}" if stage else STACK_ID


class KeyRole(StrEnum):
    """What an API key may see: a client its own jobs, the operator every job and the bulk actions."""

    CLIENT = "client"
    OPERATOR = "operator"


class AuthMode(StrEnum):
    """How callers authenticate (CDK context `auth`): an API key each (the default), or AWS_IAM with SigV4."""

    API_KEY = "apiKey"
    IAM = "iam"


# API keys: one per client name (CDK context clientKeys) and one operator key. Each ApiKey resource
# carries its name and role as tags, so the local runtime hands out the same keys the stack defines.
CLIENT_KEYS: Final = ("default",)
OPERATOR_KEY_NAME: Final = "operator"
KEY_NAME_TAG: Final = "offload:key-name"
KEY_ROLE_TAG: Final = "offload:key-role"

# The lifecycle's own job type (lambdas/lifecycle/ops_jobs/job.py): no package may define a type of this name.
OPS_JOB_TYPE: Final = "bulk_action"
# A fan-out with more children than this is retried or cancelled by an ops job (`bulk_action` with
# `fanOut`), not in the request: one transaction (and a send) per child, about 3 calls each, would take
# a 1000-endpoint fan-out past the API's 10 s (lambdas/lifecycle/ops_jobs/fan_out.py).
FAN_OUT_INLINE_CHILDREN: Final = 25
