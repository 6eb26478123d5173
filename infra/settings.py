"""Deployment settings read from CDK context, with defaults from `lambdas.config`.

Context keys (set in cdk.json, or per command: `cdk synth -c workerBatchSize=5`):

- ``alertEmail``: address subscribed to the alerts topic. Default: no subscription.
- ``senderEmail``: From address of notification emails; the worker may send only as this identity.
  Default ``no-reply@example.com``, a placeholder that synth flags with a warning.
- ``workerBatchSize``: messages per worker invocation (1..10000; at most 10 without a batching window).
- ``workerBatchingWindowSeconds``: how long SQS gathers a batch (0..300).
- ``workerMaxConcurrency``: most concurrent worker invocations the queue may drive (2..1000).
- ``recoveryRateMinutes``: how often the recovery sweep runs (1..1440).
- ``backoffBaseSeconds`` / ``backoffCapSeconds``: retry backoff of failed jobs (1 <= base <= cap <= 43200,
  the longest visibility timeout SQS accepts).
- ``stage``: a stage name in the stack's name (`Offload-staging`) and so in every name it makes; read by
  infra/synth.py (lambdas.config.stack_name). Default: none, the stack `Offload`.
- ``alertWindowSeconds``: dead jobs of one type and client raise at most one alert per window
  (1..86400, default 300); the first death of a quiet type and client alerts at once.
- ``thumbnailSizes``: edge lengths of generated thumbnails (16..4096 each), a list or "128,512".
- ``apiRateLimit`` / ``apiBurstLimit``: steady requests per second and burst of the usage plan and stage.
- ``apiQuotaPerDay``: requests one API key may make per day.
- ``allowHttpWebhooks``: let webhook jobs call plain-HTTP endpoints (default false; the local runtime
  sets it so webhooks can reach loopback receivers).
- ``webhookSecretsStartShared``: for a stack deployed before per-client webhook secrets: the clients
  (names, as in ``clientKeys`` or ``iamClients``) that existed before the upgrade, whose first secret is
  the old stack-wide one (`WebhookSigningSecret`) their receivers hold, until the operator rotates each.
  Any other client's first secret is random and its own (so is everyone's by default). ``true`` is
  refused: it would hand the stack-wide secret to clients onboarded after the upgrade too. Synth warns
  while the list is set.
- ``localRuntime``: the template is for the local runtime (`make run`), which sets it; warnings that
  only matter in an AWS account (the placeholder sender) are left out.
- ``statusShards``: partitions of each jobs-table index key (1..64, default 32): at 10,000 jobs/s each key
  takes about 20,000 / statusShards writes a second, which must stay under a partition's 1,000.
- ``deletionProtection``: DynamoDB deletion protection on both tables (default true; false for
  development stacks that are torn down often).
- ``jobLimits``: flow-control limits per job type, a JSON object keyed by type, each of
  ``concurrency``, ``perSecond``, ``burst`` and ``key`` (none, ``owner``, ``host``, ``payload.<field>``),
  overriding what the type declares field by field, e.g. ``{"send_email": {"perSecond": 50}}``.
  Checked at synth: known types, known fields, sensible values.
- ``retryPolicies``: retry policies per job type, a JSON object keyed by type, each of ``attempts``
  (1..50), ``backoffBaseSeconds``, ``backoffCapSeconds`` and ``windowSeconds`` (up to 604800, 7 days),
  overriding what the type declares field by field, e.g. ``{"send_email": {"attempts": 25}}``. Checked
  at synth: known types, known fields, sensible values.
- ``sesPerSecond``: SES's sending rate of this account (default 14, a new production account's):
  ``send_email``'s ``perSecond``.
- ``webhookHostConcurrency``: the most webhook deliveries at once to one host (default 10).
- ``clientKeys``: the client API keys, by name ("alpha,beta"; default ``default``): letters, digits, ``-``
  and ``_``, each name once. Each gets a key and a stack output ``ApiKeyId<Name>``; the operator key
  (``OperatorKeyId``) is always made.
- ``auth``: how callers authenticate: ``apiKey`` (the default: an API key each, as above) or ``iam``
  (every method but the console's is AWS_IAM: callers sign with SigV4 and no API key is made).
- ``iamClients`` (``auth=iam``): client name -> IAM role ARN, a mapping in cdk.json or
  "alpha=arn:aws:iam::111122223333:role/alpha-app,beta=..." on the command line. A role's sessions
  are that client: the name owns the jobs they submit.
- ``iamOperators`` (``auth=iam``): the IAM role ARNs of operators (a list, or comma-separated); they
  see every job, as the operator key does.
- ``snapStart``: the functions that start from a Lambda SnapStart snapshot, ``api`` or ``api,worker``
  (default none): each gets a published version and the alias ``live``, which the API integration or
  the queues' event source mappings invoke (docs/deploy.md, "SnapStart").

Values given on the command line arrive as strings, so every key accepts its string form too. The
bounds shared with the functions' run-time settings come from `lambdas.config`, so a value synth
accepts is one the functions accept when they start.
"""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from constructs import Node
from pydantic import ValidationError

from lambdas import config
from lambdas.models.iam import IamCallers
from lambdas.models.settings import THUMBNAIL_SIZES_RULE, thumbnail_size_allowed

# Tunables only the infrastructure needs: the function code never reads them.
API_TIMEOUT_SECONDS: Final = 10
DEAD_LETTER_TIMEOUT_SECONDS: Final = 30
API_MEMORY_MB: Final = 256
# The worker's memory is also what its image decoding is sized by at run time (`lambdas.config`).
WORKER_MEMORY_MB: Final = config.WORKER_MEMORY_MB
SMALL_MEMORY_MB: Final = 256
LOG_LEVEL: Final = "INFO"
UPLOADS_EXPIRE_DAYS: Final = 7
RESULTS_EXPIRE_DAYS: Final = 30
INCOMPLETE_UPLOAD_DAYS: Final = 1
ACCESS_LOGS_EXPIRE_DAYS: Final = 90
PLACEHOLDER_SENDER: Final = "no-reply@example.com"


class SnapStart(StrEnum):
    """The functions that may start from a SnapStart snapshot: the ones a caller or a burst waits on."""

    API = "api"
    WORKER = "worker"


@dataclass(frozen=True)
class Settings:
    alert_email: str | None = None
    sender_email: str = PLACEHOLDER_SENDER
    worker_batch_size: int = config.WORKER_BATCH_SIZE
    worker_batching_window_seconds: int = config.WORKER_BATCHING_WINDOW_SECONDS
    worker_max_concurrency: int = config.WORKER_MAX_CONCURRENCY
    recovery_rate_minutes: int = config.RECOVERY_RATE_MINUTES
    backoff_base_seconds: int = config.BACKOFF_BASE_SECONDS
    backoff_cap_seconds: int = config.BACKOFF_CAP_SECONDS
    alert_window_seconds: int = config.ALERT_WINDOW_SECONDS
    thumbnail_sizes: tuple[int, ...] = config.THUMBNAIL_SIZES
    api_rate_limit: int = 50
    api_burst_limit: int = 100
    api_quota_per_day: int = 100_000
    allow_http_webhooks: bool = False
    webhook_secrets_start_shared: tuple[str, ...] = ()  # client names
    local_runtime: bool = False
    deletion_protection: bool = True
    client_keys: tuple[str, ...] = config.CLIENT_KEYS
    status_shards: int = config.STATUS_SHARDS
    job_limits: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    retry_policies: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    ses_per_second: float = config.SES_PER_SECOND
    webhook_host_concurrency: int = config.WEBHOOK_HOST_CONCURRENCY
    schedule_horizon_seconds: int = config.SCHEDULE_HORIZON_SECONDS
    max_schedules_per_client: int = config.MAX_SCHEDULES_PER_CLIENT
    max_firings_per_client_day: int = config.MAX_FIRINGS_PER_CLIENT_DAY
    auth: config.AuthMode = config.AuthMode.API_KEY
    iam_clients: tuple[tuple[str, str], ...] = ()  # (client name, role ARN)
    iam_operators: tuple[str, ...] = ()  # role ARNs
    snap_start: frozenset[SnapStart] = frozenset()

    def __post_init__(self) -> None:
        problems = list(self._problems())
        if problems:
            raise ValueError("invalid CDK context: " + "; ".join(problems))

    def _problems(self) -> Iterator[str]:
        if self.alert_email is not None and not _is_email(self.alert_email):
            yield "alertEmail is not an email address"
        if not _is_email(self.sender_email):
            yield "senderEmail is not an email address"
        if not 1 <= self.worker_batch_size <= 10_000:
            yield "workerBatchSize must be 1..10000"
        if self.worker_batch_size > 10 and self.worker_batching_window_seconds == 0:
            yield "workerBatchSize above 10 needs workerBatchingWindowSeconds > 0"
        if not 0 <= self.worker_batching_window_seconds <= 300:
            yield "workerBatchingWindowSeconds must be 0..300"
        if not 2 <= self.worker_max_concurrency <= 1000:
            yield "workerMaxConcurrency must be 2..1000"
        if not 1 <= self.recovery_rate_minutes <= 1440:
            yield "recoveryRateMinutes must be 1..1440"
        if self.backoff_base_seconds < config.MIN_BACKOFF_SECONDS:
            yield f"backoffBaseSeconds must be at least {config.MIN_BACKOFF_SECONDS}"
        if not self.backoff_base_seconds <= self.backoff_cap_seconds <= config.SQS_MAX_VISIBILITY_SECONDS:
            yield f"backoffCapSeconds must be backoffBaseSeconds..{config.SQS_MAX_VISIBILITY_SECONDS}"
        if not 1 <= self.alert_window_seconds <= config.MAX_ALERT_WINDOW_SECONDS:
            yield f"alertWindowSeconds must be 1..{config.MAX_ALERT_WINDOW_SECONDS}"
        if not 1 <= self.status_shards <= config.MAX_STATUS_SHARDS:
            yield f"statusShards must be 1..{config.MAX_STATUS_SHARDS}"
        if not 1 <= self.schedule_horizon_seconds <= config.MAX_DELAY_SECONDS:
            yield f"scheduleHorizonSeconds must be 1..{config.MAX_DELAY_SECONDS}"
        if self.max_schedules_per_client < 1:
            yield "maxSchedulesPerClient must be at least 1"
        if self.max_firings_per_client_day < 1:
            yield "maxFiringsPerClientDay must be at least 1"
        if not self.thumbnail_sizes or not all(thumbnail_size_allowed(size) for size in self.thumbnail_sizes):
            yield f"thumbnailSizes: {THUMBNAIL_SIZES_RULE}"
        for key, value in (
            ("apiRateLimit", self.api_rate_limit),
            ("apiBurstLimit", self.api_burst_limit),
            ("apiQuotaPerDay", self.api_quota_per_day),
        ):
            if value < 1:
                yield f"{key} must be at least 1"
        yield from _client_key_problems(self.client_keys)
        yield from self._shared_problems()
        yield from _limit_problems(self.limit_overrides)
        yield from _retry_problems(self.retry_overrides)
        yield from self._iam_problems()

    @property
    def limit_overrides(self) -> dict[str, dict[str, Any]]:
        """The functions' JOB_LIMITS: the two built-in defaults' keys, then `jobLimits` over them."""
        overrides: dict[str, dict[str, Any]] = {
            "send_email": {"perSecond": self.ses_per_second},
            "webhook_delivery": {"concurrency": self.webhook_host_concurrency},
        }
        for job_type, fields in self.job_limits:
            overrides[job_type] = {**overrides.get(job_type, {}), **dict(fields)}
        return overrides

    @property
    def retry_overrides(self) -> dict[str, dict[str, Any]]:
        """The functions' RETRY_POLICIES: `retryPolicies` as given."""
        return {job_type: dict(fields) for job_type, fields in self.retry_policies}

    @property
    def client_names(self) -> tuple[str, ...]:
        """The clients this stack knows by name: its client keys, or with auth=iam its IAM clients."""
        if self.auth == config.AuthMode.IAM:
            return tuple(name for name, _ in self.iam_clients)
        return self.client_keys

    def _shared_problems(self) -> Iterator[str]:
        unknown = sorted(set(self.webhook_secrets_start_shared) - set(self.client_names))
        if unknown:
            yield (
                f"webhookSecretsStartShared: no client {', '.join(map(repr, unknown))} "
                f"(clients: {', '.join(self.client_names)})"
            )

    def _iam_problems(self) -> Iterator[str]:
        if self.auth != config.AuthMode.IAM:
            if self.iam_clients or self.iam_operators:
                yield "iamClients and iamOperators need auth=iam"
            return
        if not self.iam_clients:
            yield "auth=iam needs iamClients (client name -> IAM role ARN)"
        names = [name for name, _ in self.iam_clients]
        for name in names:
            if not _KEY_NAME.fullmatch(name):
                yield f"iamClients: {name!r} is not 1..64 letters, digits, - or _"
        if len(set(names)) != len(names):
            yield "iamClients: a client is named twice"
        try:
            _ = self.iam_callers
        except ValueError as error:
            yield f"iamClients/iamOperators: {error}"

    @property
    def iam_callers(self) -> IamCallers:
        """The mapping the api function is given (auth=iam)."""
        try:
            return IamCallers(clients=dict(self.iam_clients), operators=self.iam_operators)
        except ValidationError as error:
            raise ValueError("; ".join(str(e["msg"]) for e in error.errors(include_url=False))) from None

    @property
    def sender_is_placeholder(self) -> bool:
        return self.sender_email == PLACEHOLDER_SENDER

    def warnings(self) -> dict[str, str]:
        """Synth warnings (id -> message) that apply where this template is going."""
        found: dict[str, str] = {}
        # The local runtime verifies whatever sender the template names, so email works there as is.
        if self.sender_is_placeholder and not self.local_runtime:
            found["offload:placeholderSenderEmail"] = (
                f"senderEmail is the placeholder {self.sender_email}: email jobs will fail until it is "
                "set (-c senderEmail=...) to an address or domain verified in SES."
            )
        if self.webhook_secrets_start_shared:
            found["offload:webhookSecretsStartShared"] = (
                f"webhookSecretsStartShared: {', '.join(self.webhook_secrets_start_shared)} start with the "
                "stack-wide webhook signing secret. Rotate each (offload webhook-secret --client <id> --rotate, or POST "
                "/webhook-secret/rotate), then take it off the list; GET /webhook-secret?client=<name> "
                "says whether a client still signs with it (signsWithStackWideSecret)."
            )
        return found

    @property
    def sender_domain(self) -> str:
        return self.sender_email.rpartition("@")[2]

    @property
    def longest_retry_span_seconds(self) -> int:
        return self.retry_span_seconds(config.WORKER_TIMEOUT_SECONDS)

    def retry_span_seconds(self, timeout_seconds: int) -> int:
        """How long a message may legitimately stay on a job queue whose worker times out after
        `timeout_seconds`: the full delay, then every attempt timing out and waiting out its backoff, or
        the longest Retry-After a webhook receiver may ask for (a floor on the backoff). Older than this,
        the worker is not keeping up."""
        backoff = sum(
            max(
                min(self.backoff_cap_seconds, self.backoff_base_seconds * 2**attempt),
                config.MAX_RETRY_AFTER_SECONDS,
            )
            for attempt in range(config.MAX_ATTEMPTS_LIMIT)
        )
        return config.MAX_DELAY_SECONDS + backoff + config.MAX_ATTEMPTS_LIMIT * timeout_seconds

    @classmethod
    def from_context(cls, node: Node) -> "Settings":
        values: dict[str, Any] = {}
        for key, (field, parse) in _CONTEXT_KEYS.items():
            raw = node.try_get_context(key)
            if raw is None or raw == "":
                continue
            try:
                values[field] = parse(raw)
            except (TypeError, ValueError) as error:
                raise ValueError(f"invalid CDK context {key}={raw!r}: {error}") from None
        return cls(**values)


def _int(raw: Any) -> int:
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise ValueError("expected a whole number")
    return int(raw)


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ValueError("expected true or false")


def _sizes(raw: Any) -> tuple[int, ...]:
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(_int(item.strip() if isinstance(item, str) else item) for item in items)


def _auth(raw: Any) -> config.AuthMode:
    try:
        return config.AuthMode(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected one of {', '.join(mode.value for mode in config.AuthMode)}") from None


def _snap_start(raw: Any) -> frozenset[SnapStart]:
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    try:
        return frozenset(SnapStart(str(item).strip()) for item in items if str(item).strip())
    except ValueError:
        raise ValueError(
            f"expected a list of {', '.join(function.value for function in SnapStart)}"
        ) from None


def _roles(raw: Any) -> tuple[tuple[str, str], ...]:
    """{"alpha": "arn:..."} from cdk.json, or "alpha=arn:...,beta=arn:..." from the command line."""
    if isinstance(raw, dict):
        return tuple((str(name).strip(), str(arn).strip()) for name, arn in raw.items())
    pairs = []
    for item in str(raw).split(","):
        name, sep, arn = item.partition("=")
        if not sep:
            raise ValueError(f"expected name=roleArn, got {item.strip()!r}")
        pairs.append((name.strip(), arn.strip()))
    return tuple(pairs)


def _text(raw: Any) -> str:
    return str(raw).strip()


def _shared_clients(raw: Any) -> tuple[str, ...]:
    """`webhookSecretsStartShared`: the clients that existed before the upgrade; false: none."""
    if raw is False or str(raw).strip().lower() in {"false", "0", "no"}:
        return ()
    if raw is True or str(raw).strip().lower() in {"true", "1", "yes"}:
        raise ValueError(
            "name the clients that existed before the upgrade (webhookSecretsStartShared=alpha,beta): true "
            "would hand the stack-wide secret to every client's first use, clients added later included"
        )
    return _names(raw)


def _names(raw: Any) -> tuple[str, ...]:
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return tuple(str(item).strip() for item in items)


_KEY_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


def key_suffix(name: str) -> str:
    """`my-app` -> `MyApp`: how a client's name appears in its construct id and stack output."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name))


def _client_key_problems(names: tuple[str, ...]) -> Iterator[str]:
    if not names:
        yield "clientKeys needs at least one name"
    for name in names:
        if not _KEY_NAME.fullmatch(name):
            yield f"clientKeys: {name!r} is not 1..64 letters, digits, - or _"
        elif name.lower() == config.OPERATOR_KEY_NAME:
            yield f"clientKeys: {name!r} is the operator key's name"
    # Outputs are named ApiKeyId<Name>: two names that differ only in case or separators would share one.
    suffixes: dict[str, str] = {}
    for name in names:
        earlier = suffixes.setdefault(key_suffix(name), name)
        if earlier != name or names.count(name) > 1:
            yield f"clientKeys: {earlier!r} and {name!r} name the same key (ApiKeyId{key_suffix(name)})"
            break


def _per_type(raw: Any) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    value = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict) or not all(isinstance(f, dict) for f in value.values()):
        raise ValueError("expected a JSON object keyed by job type, each an object of its fields")
    return tuple((str(t), tuple(sorted(f.items()))) for t, f in sorted(value.items()))


def _limit_problems(overrides: dict[str, dict[str, Any]]) -> Iterator[str]:
    from pydantic import ValidationError

    from lambdas.models.limits import parse_overrides

    # Each field is checked here; whether the type exists is the job-type catalog's check (a type of
    # the stack's jobPackages may be limited too).
    for job_type, fields in overrides.items():
        try:
            parse_overrides({job_type: fields})
        except (ValidationError, ValueError) as error:
            yield f"jobLimits.{job_type}: {str(error).splitlines()[-1] if isinstance(error, ValidationError) else error}"


def _retry_problems(overrides: dict[str, dict[str, Any]]) -> Iterator[str]:
    from lambdas.models.retry import parse_overrides

    # Each field alone here; over the type's own policy, and whether the type exists, in the catalog.
    for job_type, fields in overrides.items():
        try:
            parse_overrides({job_type: fields})
        except ValueError as error:
            yield str(error)


def _float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a number")
    return float(raw)


_CONTEXT_KEYS: Final[dict[str, tuple[str, Callable[[Any], Any]]]] = {
    "alertEmail": ("alert_email", _text),
    "senderEmail": ("sender_email", _text),
    "workerBatchSize": ("worker_batch_size", _int),
    "workerBatchingWindowSeconds": ("worker_batching_window_seconds", _int),
    "workerMaxConcurrency": ("worker_max_concurrency", _int),
    "recoveryRateMinutes": ("recovery_rate_minutes", _int),
    "backoffBaseSeconds": ("backoff_base_seconds", _int),
    "backoffCapSeconds": ("backoff_cap_seconds", _int),
    "alertWindowSeconds": ("alert_window_seconds", _int),
    "thumbnailSizes": ("thumbnail_sizes", _sizes),
    "apiRateLimit": ("api_rate_limit", _int),
    "apiBurstLimit": ("api_burst_limit", _int),
    "apiQuotaPerDay": ("api_quota_per_day", _int),
    "allowHttpWebhooks": ("allow_http_webhooks", _bool),
    "webhookSecretsStartShared": ("webhook_secrets_start_shared", _shared_clients),
    "localRuntime": ("local_runtime", _bool),
    "deletionProtection": ("deletion_protection", _bool),
    "clientKeys": ("client_keys", _names),
    "statusShards": ("status_shards", _int),
    "jobLimits": ("job_limits", _per_type),
    "retryPolicies": ("retry_policies", _per_type),
    "sesPerSecond": ("ses_per_second", _float),
    "webhookHostConcurrency": ("webhook_host_concurrency", _int),
    "scheduleHorizonSeconds": ("schedule_horizon_seconds", _int),
    "maxSchedulesPerClient": ("max_schedules_per_client", _int),
    "maxFiringsPerClientDay": ("max_firings_per_client_day", _int),
    "auth": ("auth", _auth),
    "iamClients": ("iam_clients", _roles),
    "iamOperators": ("iam_operators", _names),
    "snapStart": ("snap_start", _snap_start),
}
CONTEXT_KEYS: Final = tuple(_CONTEXT_KEYS)


def _is_email(value: str) -> bool:
    local, at, domain = value.partition("@")
    return bool(local and at and "." in domain and " " not in value)
