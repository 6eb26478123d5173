"""The job types a stack runs, found and checked at synth: the built-in ones and a user's packages.

A user's package of job types (lambdas/jobs/packages.py) reaches the stack two ways:
- CDK context ``jobPackages``: a list (or "a,b") of folders (a path, relative to where `cdk` runs, of a
  Python package: a directory with `__init__.py`; its dependencies in an optional `requirements.txt`
  inside it) or names of installed packages (importable here; their dependencies are their
  distribution's `Requires-Dist`);
- the entry-point group ``offload.job_types`` of installed distributions (`[project.entry-points."offload.job_types"]
  crm = "crm_jobs"`), each naming a package.

Every type module is imported here, so a type that does not import, does not define `JOB_TYPE` under
its module's name, has the name of a built-in type, of another package's or of the lifecycle's own
`bulk_action` (`lambdas.jobs.packages.type_owners`), asks for a function
Lambda cannot give, declares invalid secret names, or whose settings (CDK context ``jobSettings``:
``{"sync_crm": {"crmUrl": "https://..."}}``) its `settings_model` refuses, fails `cdk synth` with its
name. A secret is its type's own: two types declaring `token` get two secrets. ``jobSecrets``
(``{"sync_crm": {"crm_token": "arn:aws:secretsmanager:..."}}``) references an existing secret instead of
the one the stack creates for a type's declared name.

Types are grouped by what they ask of their function (`WorkerFunction`): the types that ask nothing
run in the shared worker; each distinct ask is one more worker function with its own queue and
dead-letter queue (infra/work.py).
"""

import importlib
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from constructs import Node
from pydantic import ValidationError

from lambdas import config
from lambdas.jobs.base import Capability, JobType, WorkerFunction
from lambdas.jobs.packages import JobTypeClashError, type_owners
from lambdas.jobs.registry import BUILTIN_PACKAGE
from lambdas.models.limits import Limit
from lambdas.models.retry import RetryPolicy

# A declared secret: (its type, its name).
SecretKey = tuple[str, str]

CONTEXT_PACKAGES: Final = "jobPackages"
CONTEXT_SETTINGS: Final = "jobSettings"
CONTEXT_SECRETS: Final = "jobSecrets"
PACKAGE_REQUIREMENTS: Final = "requirements.txt"
_SECRET_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_PACKAGE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class JobTypesError(ValueError):
    """A package of job types, or one of its types, that the stack cannot run."""


@dataclass(frozen=True)
class JobPackage:
    """A user's package: its import name, the folder bundled under that name, its pip requirements."""

    name: str
    source: Path
    requirements: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeclaredType:
    name: str
    package: str
    function: WorkerFunction | None
    secrets: tuple[str, ...]
    settings: Mapping[str, Any] | None  # the context's values, checked against its settings_model
    uses: frozenset[Capability] = frozenset()
    limits: Limit | None = None  # what it declares (CDK context `jobLimits` overrides it field by field)
    workflow: bool = False  # runs in its group's durable function (lambdas/lifecycle/workflows/)
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def limited(self) -> bool:
        return self.limits is not None


@dataclass(frozen=True)
class WorkerGroup:
    """One worker function, its queue and its dead-letter queue, and the types it runs."""

    suffix: str  # construct-id suffix; "" for the shared worker (the stack's first queue and function)
    timeout_seconds: int
    memory_mb: int
    max_concurrency: int | None  # None: the stack's workerMaxConcurrency
    types: tuple[str, ...]

    @property
    def shared(self) -> bool:
        return not self.suffix

    @property
    def lease_seconds(self) -> int:
        return self.timeout_seconds + config.LEASE_MARGIN_SECONDS

    @property
    def visibility_seconds(self) -> int:
        return config.VISIBILITY_TIMEOUT_FACTOR * self.timeout_seconds


@dataclass(frozen=True)
class JobTypeCatalog:
    packages: tuple[JobPackage, ...]
    types: tuple[DeclaredType, ...]
    referenced_secrets: Mapping[SecretKey, str] = field(default_factory=dict)  # -> ARN (jobSecrets)

    @property
    def package_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.packages)

    @property
    def secrets(self) -> tuple[SecretKey, ...]:
        """Every declared secret, as (type, name): a type's secrets are its own."""
        return self.secrets_of(t.name for t in self.types)

    def groups(self, shared_timeout: int, shared_memory: int) -> tuple[WorkerGroup, ...]:
        """The shared worker first, then one group per distinct ask, in a stable order."""
        asks: dict[tuple[int, int, int | None], list[str]] = {}
        shared: list[str] = []
        for declared in self.types:
            ask = declared.function
            if ask is None or ask == WorkerFunction():
                shared.append(declared.name)
                continue
            key = (
                ask.timeout_seconds or shared_timeout,
                ask.memory_mb or shared_memory,
                ask.max_concurrency,
            )
            asks.setdefault(key, []).append(declared.name)
        groups = [WorkerGroup("", shared_timeout, shared_memory, None, tuple(shared))]
        for (timeout, memory, concurrency), names in sorted(asks.items(), key=lambda item: str(item[0])):
            suffix = f"{timeout}s{memory}MB" + (f"x{concurrency}" if concurrency else "")
            groups.append(WorkerGroup(suffix, timeout, memory, concurrency, tuple(sorted(names))))
        return tuple(groups)

    def workflows_of(self, names: Iterable[str]) -> tuple[str, ...]:
        """The workflow types among `names`: a group with any gets a durable function."""
        wanted = set(names)
        return tuple(t.name for t in self.types if t.name in wanted and t.workflow)

    def settings_of(self, names: Iterable[str]) -> dict[str, Any]:
        wanted = set(names)
        return {t.name: dict(t.settings) for t in self.types if t.name in wanted and t.settings is not None}

    def secrets_of(self, names: Iterable[str]) -> tuple[SecretKey, ...]:
        wanted = set(names)
        return tuple(sorted({(t.name, s) for t in self.types if t.name in wanted for s in t.secrets}))

    def uses_of(self, names: Iterable[str]) -> frozenset[Capability]:
        wanted = set(names)
        return frozenset(c for t in self.types if t.name in wanted for c in t.uses)

    def limited_of(self, names: Iterable[str], overridden: Iterable[str] = ()) -> bool:
        """Whether any of `names` has a limit: its own, or one CDK context `jobLimits` gives it."""
        wanted, given = set(names), set(overridden)
        return any(t.limited or t.name in given for t in self.types if t.name in wanted)

    def check_limited(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        """`jobLimits` may name any type the stack runs, a package's included, and no other; each override
        over what its type declares is a limit the worker can apply (`burst` needs a `perSecond`, its own
        or the type's)."""
        declared = {t.name: t.limits for t in self.types}
        _refuse_unknown("jobLimits", overrides, declared)
        for name, fields in overrides.items():
            try:
                (declared[name] or Limit()).overridden(dict(fields))
            except ValidationError as error:
                raise JobTypesError(f"jobLimits.{name}: {error.errors()[0]['msg']}") from None

    def check_retry_policies(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        """`retryPolicies` may name any type the stack runs, and each override must make a valid policy
        over what its type declares (a base above the type's cap is refused here, not at run time)."""
        declared = {t.name: t.retry for t in self.types}
        _refuse_unknown("retryPolicies", overrides, declared)
        for name, fields in overrides.items():
            try:
                declared[name].overridden(dict(fields))
            except ValueError as error:
                raise JobTypesError(f"retryPolicies.{name}: {error}") from None

    @classmethod
    def from_context(cls, node: Node) -> "JobTypeCatalog":
        return cls.load(
            node.try_get_context(CONTEXT_PACKAGES),
            node.try_get_context(CONTEXT_SETTINGS),
            node.try_get_context(CONTEXT_SECRETS),
        )

    @classmethod
    def load(cls, packages: Any = None, settings: Any = None, secrets: Any = None) -> "JobTypeCatalog":
        found = _dedupe([*(_package(entry) for entry in _entries(packages)), *_entry_point_packages()])
        settings = _mapping(CONTEXT_SETTINGS, settings)
        referenced = _referenced(_mapping(CONTEXT_SECRETS, secrets))
        try:
            owners = type_owners(p.name for p in found)
        except JobTypeClashError as clash:
            raise JobTypesError(str(clash)) from None
        types = [
            _declared(name, module, package, settings.get(name)) for name, (package, module) in owners.items()
        ]
        unknown = sorted(set(settings) - {t.name for t in types if t.settings is not None})
        if unknown:
            raise JobTypesError(
                f"{CONTEXT_SETTINGS} names {', '.join(unknown)}: no such type declares settings"
            )
        declared_secrets = {(t.name, s) for t in types for s in t.secrets}
        stray = sorted(set(referenced) - declared_secrets)
        if stray:
            named = ", ".join(f"{type_name}.{name}" for type_name, name in stray)
            raise JobTypesError(f"{CONTEXT_SECRETS} names {named}: no such type declares it")
        return cls(tuple(found), tuple(types), referenced)


def _referenced(raw: Mapping[str, Any]) -> dict[SecretKey, str]:
    """`jobSecrets`: {type: {name: ARN}}."""
    found: dict[SecretKey, str] = {}
    for type_name, names in raw.items():
        if not isinstance(names, Mapping):
            raise JobTypesError(
                f'{CONTEXT_SECRETS}.{type_name} must be an object of secret names and ARNs ({{"token": "arn:..."}})'
            )
        for name, arn in names.items():
            found[(str(type_name), str(name))] = str(arn)
    return found


def _entries(raw: Any) -> list[str]:
    if raw is None or raw == "":
        return []
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    return [str(item).strip() for item in items if str(item).strip()]


def _mapping(key: str, raw: Any) -> Mapping[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):  # -c jobSettings='{"sync_crm": {...}}'
        import json

        try:
            raw = json.loads(raw)
        except ValueError as error:
            raise JobTypesError(f"{key} is not JSON: {error}") from None
    if not isinstance(raw, Mapping):
        raise JobTypesError(f"{key} must be an object")
    return raw


def package_folders(packages: Any) -> list[Path]:
    """The folders among `jobPackages` entries (the local runtime puts their parents on PYTHONPATH)."""
    return [Path(entry).expanduser().resolve() for entry in _entries(packages) if _is_folder(entry)]


def _is_folder(entry: str) -> bool:
    return "/" in entry or "\\" in entry or entry.startswith(".") or Path(entry).is_dir()


def _package(entry: str) -> JobPackage:
    """A `jobPackages` entry: a folder (a path) or the name of an importable package."""
    if _is_folder(entry):
        folder = Path(entry).expanduser().resolve()
        if not (folder / "__init__.py").is_file():
            raise JobTypesError(f"{CONTEXT_PACKAGES}: {entry} is not a Python package (no __init__.py)")
        if not _PACKAGE_NAME.fullmatch(folder.name):
            raise JobTypesError(f"{CONTEXT_PACKAGES}: {folder.name!r} is not a Python package name")
        _importable_from(folder.parent)
        return JobPackage(folder.name, folder, _requirements_file(folder))
    return _installed(entry)


def _importable_from(directory: Path) -> None:
    # The synth imports the types to check them, as the function will from its asset.
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))


def _installed(name: str) -> JobPackage:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise JobTypesError(
            f"{CONTEXT_PACKAGES}: no package {name!r} is installed (nor a folder of that name)"
        )
    if "." in name:
        raise JobTypesError(f"{CONTEXT_PACKAGES}: {name!r}: name a top-level package")
    folder = Path(next(iter(spec.submodule_search_locations))).resolve()
    return JobPackage(name, folder, _requirements_file(folder) or _distribution_requirements(name))


def _requirements_file(folder: Path) -> tuple[str, ...]:
    path = folder / PACKAGE_REQUIREMENTS
    if not path.is_file():
        return ()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return tuple(line for line in lines if line)


def _distribution_requirements(package: str) -> tuple[str, ...]:
    """What the distribution providing `package` requires, without its extras' requirements."""
    names = importlib.metadata.packages_distributions().get(package, [])
    required: list[str] = []
    for name in names:
        for line in importlib.metadata.requires(name) or []:
            if "extra ==" not in line.replace("extra==", "extra =="):
                required.append(line)
    return tuple(sorted(set(required)))


def _entry_point_packages() -> Iterator[JobPackage]:
    for entry_point in importlib.metadata.entry_points(group=config.JOB_TYPES_ENTRY_POINT_GROUP):
        if entry_point.module != BUILTIN_PACKAGE:
            yield _installed(entry_point.module)


def _dedupe(packages: Iterable[JobPackage]) -> list[JobPackage]:
    seen: dict[str, JobPackage] = {}
    for package in packages:
        earlier = seen.setdefault(package.name, package)
        if earlier.source != package.source:
            raise JobTypesError(
                f"two packages are named {package.name}: {earlier.source} and {package.source}"
            )
    return list(seen.values())


def _declared(name: str, module: str, package: str, settings: Any) -> DeclaredType:
    try:
        job_type = getattr(importlib.import_module(module), "JOB_TYPE", None)
    except Exception as error:
        raise JobTypesError(
            f"job type {name!r} ({module}) does not import: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(job_type, JobType):
        raise JobTypesError(
            f"job type {name!r}: {module} defines no JOB_TYPE = JobType(...); every module of a package"
            f" of job types is a type, except those whose name starts with '_': name a helper module"
            f" _{name}.py and it is skipped"
        )
    if job_type.name != name:
        raise JobTypesError(f"job type {name!r}: {module} defines a type named {job_type.name!r}")
    problems = [*_function_problems(job_type.function), *_secret_problems(job_type.secrets)]
    if problems:
        raise JobTypesError(f"job type {name!r}: {'; '.join(problems)}")
    return DeclaredType(
        name,
        package,
        job_type.function,
        tuple(job_type.secrets),
        _settings(job_type, settings),
        uses=frozenset(Capability(c) for c in job_type.uses),
        limits=job_type.limits,
        workflow=job_type.workflow,
        retry=job_type.retry,
    )


def _settings(job_type: JobType[Any], values: Any) -> Mapping[str, Any] | None:
    if job_type.settings_model is None:
        return None
    values = {} if values is None else values
    if not isinstance(values, Mapping):
        raise JobTypesError(
            f"job type {job_type.name!r}: {CONTEXT_SETTINGS}.{job_type.name} must be an object"
        )
    try:
        job_type.settings_model.model_validate(values)
    except ValidationError as error:
        refused = "; ".join(
            f"{'.'.join(map(str, problem['loc'])) or '(settings)'}: {problem['msg']}"
            for problem in error.errors(include_url=False)
        )
        raise JobTypesError(f"job type {job_type.name!r}: invalid {CONTEXT_SETTINGS}: {refused}") from None
    return dict(values)


def _function_problems(ask: WorkerFunction | None) -> Iterator[str]:
    if ask is None:
        return
    if ask.timeout_seconds is not None and not 1 <= ask.timeout_seconds <= config.LAMBDA_MAX_TIMEOUT_SECONDS:
        yield f"function timeout_seconds must be 1..{config.LAMBDA_MAX_TIMEOUT_SECONDS}"
    if (
        ask.memory_mb is not None
        and not config.LAMBDA_MIN_MEMORY_MB <= ask.memory_mb <= config.LAMBDA_MAX_MEMORY_MB
    ):
        yield f"function memory_mb must be {config.LAMBDA_MIN_MEMORY_MB}..{config.LAMBDA_MAX_MEMORY_MB}"
    if ask.memory_mb is not None and ask.memory_mb <= config.DECODE_RESERVED_MB:
        yield f"function memory_mb must be above {config.DECODE_RESERVED_MB} (the worker's own reserve)"
    if ask.max_concurrency is not None and not 2 <= ask.max_concurrency <= 1000:
        yield "function max_concurrency must be 2..1000"


def _secret_problems(names: Iterable[str]) -> Iterator[str]:
    for name in names:
        if not isinstance(name, str) or not _SECRET_NAME.fullmatch(name):
            yield f"secret name {name!r} is not 1..64 letters, digits, - or _"


def _refuse_unknown(context_key: str, named: Iterable[str], known: Iterable[str]) -> None:
    """A context key keyed by job type may name only types the stack runs."""
    unknown = sorted(set(named) - set(known))
    if unknown:
        raise JobTypesError(
            f"{context_key}: no job type {', '.join(map(repr, unknown))} (known: {', '.join(sorted(known))})"
        )
