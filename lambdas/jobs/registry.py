"""The job-type registry: the API validates against it, the worker dispatches through it.

A type is registered either as a `JobType` (`register`) or by the name of the module that defines it as
`JOB_TYPE` (`register_module`); the module is imported on the first `get` of that name. A cold start so
loads the one type its first request names, not all of them.
"""

import importlib
import pkgutil
from collections.abc import Iterator
from threading import Lock
from typing import Any

from lambdas.jobs.base import JobType

BUILTIN_PACKAGE = "lambdas.jobs.types"

_types: dict[str, JobType[Any]] = {}
_modules: dict[str, str] = {}
# Job threads of one batch may look up the same not yet imported type at once.
_loading = Lock()


class NotRegisteredError(LookupError):
    """No type of that name is registered (the API's answer to it is `lifecycle.errors.UnknownJobTypeError`)."""


def type_modules(package: str) -> dict[str, str]:
    """The types of `package` by name, each with the module that defines it (the package is imported,
    its modules are not)."""
    imported = importlib.import_module(package)
    paths = getattr(imported, "__path__", None)
    if paths is None:
        raise ValueError(f"{package} is a module, not a package of job types")
    return {
        found.name: f"{package}.{found.name}"
        for found in sorted(pkgutil.iter_modules(paths), key=lambda m: m.name)
        if not found.name.startswith("_")
    }


class UnusableTypeError(Exception):
    """A registered type this process cannot run: its module does not import, or its settings are
    missing or invalid. Its jobs die saying so; no retry can fix a function's code or environment."""


def register(job_type: JobType[Any]) -> JobType[Any]:
    if job_type.name in _types and _types[job_type.name] is not job_type:
        raise ValueError(f"job type {job_type.name!r} is already registered")
    _types[job_type.name] = job_type
    _modules.pop(job_type.name, None)
    return job_type


def register_module(name: str, module: str) -> None:
    """Register the type `name` defined as `JOB_TYPE` in `module`, imported when first looked up."""
    if name not in _types:
        _modules[name] = module


def unregister(name: str) -> None:
    _types.pop(name, None)
    _modules.pop(name, None)


def _load(name: str) -> JobType[Any] | None:
    with _loading:
        if name in _types:
            return _types[name]
        module_name = _modules.get(name)
        if module_name is None:
            return None
        try:
            imported = importlib.import_module(module_name)
        except Exception as error:
            raise UnusableTypeError(
                f"job type {name!r} does not import here: {type(error).__name__}: {error}"
            ) from error
        job_type: JobType[Any] | None = getattr(imported, "JOB_TYPE", None)
        if job_type is None:  # a helper module, not a type
            del _modules[name]
            return None
        if job_type.name != name:
            raise ValueError(f"{module_name} defines job type {job_type.name!r}, registered as {name!r}")
        return register(job_type)


def get(name: str) -> JobType[Any]:
    job_type = _types.get(name) or _load(name)
    if job_type is None and name not in _modules:
        # A process that never listed the built-in types (the dead-letter function) still finds them.
        for builtin, module in type_modules(BUILTIN_PACKAGE).items():
            register_module(builtin, module)
        job_type = _load(name)
    if job_type is None:
        raise NotRegisteredError(name)
    return job_type


def find(name: str) -> JobType[Any] | None:
    """The type `name`, or None when no type of that name is registered."""
    return _types.get(name) or _load(name)


def public_types() -> Iterator[JobType[Any]]:
    """Every public type; this imports the modules of those not yet looked up."""
    loaded = (_types.get(name) or _load(name) for name in names())
    return (t for t in loaded if t is not None and t.public)


def names() -> list[str]:
    return sorted({*_types, *_modules})
