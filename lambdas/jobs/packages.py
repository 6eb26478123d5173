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

from collections.abc import Iterable

from lambdas.jobs import registry
from lambdas.jobs.registry import BUILTIN_PACKAGE, type_modules


class JobTypeClashError(ValueError):
    """Two packages define a type of the same name."""


def register_job_types(packages: Iterable[str] = ()) -> None:
    """Register the built-in types and those of `packages` (idempotent)."""
    owners: dict[str, str] = {}
    for package in (BUILTIN_PACKAGE, *packages):
        for name, module in type_modules(package).items():
            earlier = owners.setdefault(name, package)
            if earlier != package:
                raise JobTypeClashError(f"job type {name!r} of {package} clashes with {earlier}'s")
            registry.register_module(name, module)
