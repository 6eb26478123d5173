"""Packages of job types: the built-in one (`lambdas.jobs.types`) and a user's own, registered alike.

A package of job types is an importable Python package whose every public module (a name not starting
with `_`) defines one type as `JOB_TYPE`, named after the module. A function registers each module of
each package it is given by name; the module is imported on the first lookup of its type, so a cold
start still loads only the types its requests use.

A user's packages reach a function as the names the stack writes into its environment (JOB_PACKAGES,
from CDK context `jobPackages` and the `offload.job_types` entry points found at synth, infra/job_types.py),
and their code is in the function's asset beside `lambdas/`. A type whose name another package already
registered is refused: a user's type cannot replace a built-in one by accident.
"""

import importlib
import pkgutil
from collections.abc import Iterable

from lambdas.jobs import registry

BUILTIN_PACKAGE = "lambdas.jobs.types"


class JobTypeClashError(ValueError):
    """Two packages define a type of the same name."""


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


def register_job_types(packages: Iterable[str] = ()) -> None:
    """Register the built-in types and those of `packages` (idempotent)."""
    owners: dict[str, str] = {}
    for package in (BUILTIN_PACKAGE, *packages):
        for name, module in type_modules(package).items():
            earlier = owners.setdefault(name, package)
            if earlier != package:
                raise JobTypeClashError(f"job type {name!r} of {package} clashes with {earlier}'s")
            registry.register_module(name, module)
