"""Each function's environment, declared once and validated at cold start.

One class per function (`ApiSettings`, `WorkerSettings`, `DeadLetterSettings`, `RecoverySettings`,
`FiringSettings`), holding everything that function reads, the settings of the job types it runs or
checks included. Each setting names its variable (the `ENV_*` names of `lambdas.config`) and the rule
its value keeps; the stack builds each function's environment from those names and checks its concrete
values by the same rules at synth (infra/environment.py), so a name the code reads is a name the stack
sets.

A handler loads its settings on its first invocation through the cached loaders below (`api()`,
`worker()`, ...); nothing reads the environment at import time. A missing resource name is an error
when the function starts, never a silent default. Tests call `reset()` between cases.

The reader is plain Python, not pydantic: the dead-letter, recovery and schedules functions' first
calls need nothing else of pydantic, which costs more CPU to load than the rest of their start
(docs/performance.md). Values are read as pydantic's lax mode read them (`"true"`/`"0"`/`"yes"` for a
flag, a number's text), and a default keeps its setting's rule too.
"""

import functools
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, Self, TypeVar

from lambdas import config

if TYPE_CHECKING:
    from lambdas.models.iam import IamCallers

_REQUIRED: Final = object()


class SettingsError(ValueError):
    """A function's environment breaks its settings' rules: every variable at fault, with the reason."""

    def __init__(self, settings: str, problems: list[tuple[str, str]]) -> None:
        self.settings = settings
        self.problems = problems  # (variable, reason)
        said = "; ".join(f"{name}: {why}" if name else why for name, why in problems)
        super().__init__(f"invalid {settings}: {said}")


@dataclass(frozen=True)
class Variable:
    """One setting's environment variable: `read` turns its text into the value, `check` the value into
    the one kept (a default passes `check` too); both raise ValueError with the reason."""

    name: str
    read: Callable[[str], Any] = str
    default: Any = _REQUIRED
    factory: Callable[[], Any] | None = None
    check: Callable[[Any], Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and self.factory is None

    def value(self, environ: Mapping[str, str]) -> Any:
        text = environ.get(self.name)
        if text is not None:
            value = self.read(text)
        elif self.factory is not None:
            value = self.factory()
        elif self.default is not _REQUIRED:
            value = self.default
        else:
            raise ValueError("required, and not set")
        return self.check(value) if self.check is not None and value is not None else value


def setting(
    name: str,
    read: Callable[[str], Any] = str,
    default: Any = _REQUIRED,
    *,
    factory: Callable[[], Any] | None = None,
    check: Callable[[Any], Any] | None = None,
) -> Any:
    """A setting read from the variable `name` (typed as its value by its annotation)."""
    return Variable(name, read, default, factory, check)


class Environment:
    """The base of every function's settings: read from a mapping of environment variables, frozen."""

    _variables: ClassVar[dict[str, Variable]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, Variable] = {}
        for klass in reversed(cls.__mro__):
            found.update((k, v) for k, v in vars(klass).items() if isinstance(v, Variable))
        cls._variables = found

    @classmethod
    def variables(cls) -> Iterator[Variable]:
        """Every variable these settings read."""
        return iter(cls._variables.values())

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Self:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        problems: list[tuple[str, str]] = []
        for attribute, variable in cls._variables.items():
            try:
                values[attribute] = variable.value(environ)
            except (ValueError, TypeError) as error:
                problems.append((variable.name, str(error)))
        if problems:
            raise SettingsError(cls.__name__, problems)
        made = object.__new__(cls)
        made.__dict__.update(values)
        try:
            made._check()
        except ValueError as error:
            raise SettingsError(cls.__name__, [("", str(error))]) from None
        return made

    def _check(self) -> None:
        """Rules across settings, once each one holds."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __repr__(self) -> str:
        shown = ", ".join(f"{a}={getattr(self, a)!r}" for a in self._variables)
        return f"{type(self).__name__}({shown})"


# How a variable's text is read.
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE | _FALSE:
        return lowered in _TRUE
    raise ValueError(f"{text!r} is not a boolean (true or false)")


def integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


def number(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def names(text: str) -> tuple[str, ...]:
    """`crm_jobs,billing_jobs` -> ("crm_jobs", "billing_jobs")."""
    return tuple(part for part in text.replace(" ", "").split(",") if part)


def json_object(kind: type[str] | type[dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """A JSON object whose every value is a string (`kind` str) or an object (`kind` dict)."""
    what = "a string" if kind is str else "an object"

    def read(text: str) -> dict[str, Any]:
        try:
            found = json.loads(text) if text else {}
        except ValueError as error:
            raise ValueError(f"not JSON: {error}") from None
        if not isinstance(found, dict):
            raise ValueError("not a JSON object")
        wrong = [key for key, value in found.items() if not isinstance(value, kind)]
        if wrong:
            raise ValueError(f"the value of {', '.join(map(repr, wrong))} is not {what}")
        return found

    return read


def length(minimum: int = 1) -> Callable[[str], str]:
    def check(value: str) -> str:
        if len(value) < minimum:
            raise ValueError(f"at least {minimum} character{'s' if minimum > 1 else ''}")
        return value

    return check


def between(
    ge: float | None = None, le: float | None = None, gt: float | None = None
) -> Callable[[float], float]:
    def check(value: float) -> float:
        if ge is not None and value < ge:
            raise ValueError(f"must be at least {ge:g}, not {value:g}")
        if gt is not None and value <= gt:
            raise ValueError(f"must be more than {gt:g}, not {value:g}")
        if le is not None and value > le:
            raise ValueError(f"must be at most {le:g}, not {value:g}")
        return value

    return check


def _job_limits(text: str) -> dict[str, dict[str, Any]]:
    from lambdas.models.limits import parse_overrides  # pydantic's: the api and worker load it anyway

    raw = json_object(dict)(text)
    try:
        return parse_overrides(raw)
    except ValueError as error:
        raise ValueError(_reason(error)) from None


def _retry_policies(text: str) -> dict[str, dict[str, Any]]:
    from lambdas.models.retry import parse_overrides

    return parse_overrides(json_object(dict)(text))


def _iam_callers(text: str) -> "IamCallers":
    from lambdas.models.iam import IamCallers  # the api's alone, which loads pydantic anyway

    try:
        return IamCallers.model_validate_json(text)
    except ValueError as error:
        raise ValueError(_reason(error)) from None


def _reason(error: ValueError) -> str:
    """What a pydantic model refused (its ValidationError is a ValueError), each field named, no URL."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error)
    found = errors(include_url=False)
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"] for e in found)


def _thumbnail_sizes(text: str) -> tuple[int, ...]:
    """`128,512` in the environment."""
    return tuple(integer(part) for part in names(text))


def _sensible_sizes(value: tuple[int, ...]) -> tuple[int, ...]:
    if not value or not all(thumbnail_size_allowed(size) for size in value):
        raise ValueError(THUMBNAIL_SIZES_RULE)
    return tuple(sorted(set(value), reverse=True))


THUMBNAIL_SIZES_RULE = (
    f"thumbnail sizes must be {config.MIN_THUMBNAIL_PIXELS}..{config.MAX_THUMBNAIL_PIXELS} pixels"
)


def thumbnail_size_allowed(size: int) -> bool:
    return config.MIN_THUMBNAIL_PIXELS <= size <= config.MAX_THUMBNAIL_PIXELS


class JobsTableSettings(Environment):
    jobs_table: str = setting(config.ENV_JOBS_TABLE, check=length())
    status_shards: int = setting(
        config.ENV_STATUS_SHARDS,
        integer,
        config.STATUS_SHARDS,
        check=between(ge=1, le=config.MAX_STATUS_SHARDS),
    )
    finished_ttl_days: int = setting(
        config.ENV_FINISHED_TTL_DAYS, integer, config.FINISHED_TTL_DAYS, check=between(ge=1)
    )


class WebhookPolicySettings(Environment):
    """Where webhooks may go: the API checks fan-outs at submission, the worker every delivery."""

    allow_http_webhooks: bool = setting(config.ENV_ALLOW_HTTP_WEBHOOKS, flag, False)
    # Local runtime and tests only: 127.0.0.0/8 and ::1 become reachable.
    allow_loopback_webhooks: bool = setting(config.ENV_WEBHOOK_ALLOW_LOOPBACK, flag, False)


class UploadsSettings(Environment):
    """The uploads bucket: the API presigns and checks uploads, the worker reads them and writes results."""

    uploads_bucket: str = setting(config.ENV_UPLOADS_BUCKET, check=length())
    max_file_bytes: int = setting(
        config.ENV_MAX_FILE_BYTES, integer, config.MAX_FILE_BYTES, check=between(gt=0)
    )


class WebhookSecretsSettings(Environment):
    """Where each client's webhook signing secrets live: the API hands them out and rotates them, the
    worker signs with them. `webhook_secrets_start_shared` (an upgraded stack): the clients (their owner
    ids) whose first secret is the stack-wide one their receivers already hold, until the operator
    rotates it; any other client's first secret is its own."""

    webhook_secrets_table: str = setting(config.ENV_WEBHOOK_SECRETS_TABLE, check=length())
    webhook_secret_arn: str = setting(config.ENV_WEBHOOK_SECRET_ARN, check=length())
    webhook_secrets_start_shared: tuple[str, ...] = setting(
        config.ENV_WEBHOOK_SECRETS_START_SHARED, names, ()
    )


class LimitsSettings(Environment):
    """Flow control: where limits are held, and the stack's overrides of each job type's limit (the
    worker applies them, GET /limits shows them)."""

    limits_table: str = setting(config.ENV_LIMITS_TABLE, check=length())
    job_limits: dict[str, dict[str, Any]] = setting(config.ENV_JOB_LIMITS, _job_limits, factory=dict)


class RetrySettings(Environment):
    """How failed attempts are retried: the stack's backoff, and its overrides of each job type's retry
    policy (CDK context `retryPolicies`): the API reads a type's attempts, the worker all of it."""

    backoff_base_seconds: float = setting(
        config.ENV_BACKOFF_BASE_SECONDS,
        number,
        config.BACKOFF_BASE_SECONDS,
        check=between(ge=config.MIN_BACKOFF_SECONDS),
    )
    backoff_cap_seconds: float = setting(
        config.ENV_BACKOFF_CAP_SECONDS,
        number,
        config.BACKOFF_CAP_SECONDS,
        check=between(ge=config.MIN_BACKOFF_SECONDS, le=config.SQS_MAX_VISIBILITY_SECONDS),
    )
    retry_policies: dict[str, dict[str, Any]] = setting(
        config.ENV_RETRY_POLICIES, _retry_policies, factory=dict
    )


class HorizonSettings(Environment):
    """How far ahead a job with a start time is handed to SQS (nearer: `pending`; further: `scheduled`)."""

    schedule_horizon_seconds: int = setting(
        config.ENV_SCHEDULE_HORIZON_SECONDS,
        integer,
        config.SCHEDULE_HORIZON_SECONDS,
        check=between(ge=1, le=config.MAX_DELAY_SECONDS),
    )


class ScheduleSettings(HorizonSettings):
    """The recurring schedules' table, how many schedules one client may keep, and how many jobs its
    firings may create a day."""

    schedules_table: str = setting(config.ENV_SCHEDULES_TABLE, check=length())
    max_schedules_per_client: int = setting(
        config.ENV_MAX_SCHEDULES_PER_CLIENT, integer, config.MAX_SCHEDULES_PER_CLIENT, check=between(ge=1)
    )
    max_firings_per_client_day: int = setting(
        config.ENV_MAX_FIRINGS_PER_CLIENT_DAY, integer, config.MAX_FIRINGS_PER_CLIENT_DAY, check=between(ge=1)
    )


class JobTypesSettings(Environment):
    """The job types a function knows beyond the built-in ones (lambdas/jobs/packages.py), where each
    type's jobs are queued when not on the shared queue, and, in a worker, its types' settings and
    secrets (infra/job_types.py writes them)."""

    job_packages: tuple[str, ...] = setting(config.ENV_JOB_PACKAGES, names, ())
    job_queue_urls: dict[str, str] = setting(config.ENV_JOB_QUEUE_URLS, json_object(str), factory=dict)
    # Each job queue's high queue (queue URL -> URL), where `high` jobs are sent.
    high_queue_urls: dict[str, str] = setting(config.ENV_HIGH_QUEUE_URLS, json_object(str), factory=dict)
    job_settings: dict[str, dict[str, Any]] = setting(
        config.ENV_JOB_SETTINGS, json_object(dict), factory=dict
    )
    # By type, then name: a type's secrets are its own.
    job_secrets: dict[str, dict[str, Any]] = setting(config.ENV_JOB_SECRETS, json_object(dict), factory=dict)


class ApiSettings(
    JobsTableSettings,
    WebhookPolicySettings,
    UploadsSettings,
    WebhookSecretsSettings,
    LimitsSettings,
    ScheduleSettings,
    JobTypesSettings,
    RetrySettings,
):
    queue_url: str = setting(config.ENV_QUEUE_URL, check=length())
    # GET /jobs/{jobId}/deliveries reads the webhook delivery log.
    deliveries_table: str = setting(config.ENV_DELIVERIES_TABLE, check=length())
    # Who the callers are, one of the two (CDK context `auth`): with API keys, the key id API Gateway
    # reports for the operator key (never its value), the caller that sees every job; with IAM, the
    # roles of the clients and operators.
    operator_key_id: str | None = setting(config.ENV_OPERATOR_KEY_ID, default=None, check=length())
    iam_callers: "IamCallers | None" = setting(config.ENV_IAM_CALLERS, _iam_callers, None)
    dlq_url: str = setting(config.ENV_DLQ_URL, check=length())  # GET /stats reads its depth

    def _check(self) -> None:
        if (self.operator_key_id is None) == (self.iam_callers is None):
            raise ValueError(f"set one of {config.ENV_OPERATOR_KEY_ID} and {config.ENV_IAM_CALLERS}")


class WorkerSettings(
    JobsTableSettings,
    WebhookPolicySettings,
    UploadsSettings,
    WebhookSecretsSettings,
    LimitsSettings,
    JobTypesSettings,
    RetrySettings,
):
    queue_url: str = setting(config.ENV_QUEUE_URL, check=length())
    dlq_url: str = setting(config.ENV_DLQ_URL, check=length())
    workflow_function: str = setting(config.ENV_WORKFLOW_FUNCTION, default="")
    lease_seconds: int = setting(config.ENV_LEASE_SECONDS, integer, config.LEASE_SECONDS, check=between(gt=0))
    limit_max_wait_seconds: int = setting(
        config.ENV_LIMIT_MAX_WAIT_SECONDS, integer, config.LIMIT_MAX_WAIT_SECONDS, check=between(gt=0)
    )
    concurrency: int = setting(
        config.ENV_WORKER_CONCURRENCY, integer, config.WORKER_CONCURRENCY, check=between(ge=1, le=100)
    )
    # Job types: webhook deliveries log each attempt and sign with their client's secrets; email goes
    # out as the stack's sender only (a payload cannot choose it); process_file's thumbnail sizes.
    deliveries_table: str = setting(config.ENV_DELIVERIES_TABLE, check=length())
    sender_email: str = setting(config.ENV_SENDER_EMAIL, check=length(3))
    thumbnail_sizes: tuple[int, ...] = setting(
        config.ENV_THUMBNAIL_SIZES, _thumbnail_sizes, config.THUMBNAIL_SIZES, check=_sensible_sizes
    )
    # What Lambda gives the function; process_file sizes its image decoding by it.
    memory_mb: int = setting(
        config.ENV_FUNCTION_MEMORY_MB,
        integer,
        config.WORKER_MEMORY_MB,
        check=between(gt=config.DECODE_RESERVED_MB),
    )


class DeadLetterSettings(JobsTableSettings):
    alerts_topic_arn: str = setting(config.ENV_ALERTS_TOPIC_ARN, check=length())
    alert_window_seconds: int = setting(
        config.ENV_ALERT_WINDOW_SECONDS,
        integer,
        config.ALERT_WINDOW_SECONDS,
        check=between(ge=1, le=config.MAX_ALERT_WINDOW_SECONDS),
    )


class RecoverySettings(JobsTableSettings, HorizonSettings, JobTypesSettings):
    queue_url: str = setting(config.ENV_QUEUE_URL, check=length())
    # Each job queue's DLQ, where a workflow the sweep ends dead gets its alert.
    dead_letter_queue_urls: dict[str, str] = setting(config.ENV_DEAD_LETTER_QUEUE_URLS, json_object(str))
    grace_seconds: int = setting(
        config.ENV_RECOVERY_GRACE_SECONDS, integer, config.RECOVERY_GRACE_SECONDS, check=between(ge=0)
    )


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...


E = TypeVar("E", bound=Environment)

_caches: list[_Clearable] = []


def cached(model: type[E]) -> Callable[[], E]:
    """A loader that reads `model` from the environment on its first call and keeps it until `reset()`."""

    @functools.cache
    def load() -> E:
        return model.load()

    _caches.append(load)
    return load


def forget_on_reset(cache: _Clearable) -> None:
    """Have `reset()` also clear another per-process cache (anything with `cache_clear`), once."""
    if cache not in _caches:
        _caches.append(cache)


def reset() -> None:
    """Forget every loaded setting and registered cache (tests call it between cases)."""
    for cache in _caches:
        cache.cache_clear()


api = cached(ApiSettings)
worker = cached(WorkerSettings)
dead_letter = cached(DeadLetterSettings)
recovery = cached(RecoverySettings)


class FiringSettings(JobsTableSettings, ScheduleSettings, JobTypesSettings):
    """The `schedules` function: EventBridge Scheduler's target, which creates one job per firing."""

    queue_url: str = setting(config.ENV_QUEUE_URL, check=length())


firing = cached(FiringSettings)
