"""Packages of job types: the built-in one (`lambdas.jobs.types`) and a user's own, registered alike.

A package of job types is an importable Python package whose every public module (a name not starting
with `_`) defines one type as `JOB_TYPE`, named after the module. A function registers each module of
each package it is given by name; the module is imported on the first lookup of its type, so a cold
start still loads only the types its requests use.

A user's packages reach a function as the names the stack writes into its environment (JOB_PACKAGES,
from CDK context `jobPackages` and the `offload.job_types` entry points found at synth, infra/job_types.py),
and their code is in the function's asset beside `lambdas/`. A type whose name another package already
registered is refused, and so is a type named like the lifecycle's own ops job type (`bulk_action`): a
user's type can replace neither a built-in one nor the lifecycle's. `type_owners` is that rule, for the
functions when they start and for `cdk synth` (infra/job_types.py) alike.
"""

from collections.abc import Iterable
from typing import Final

from lambdas import config
from lambdas.jobs import registry
from lambdas.jobs.registry import BUILTIN_PACKAGE, type_modules

# Names the lifecycle runs itself, by who owns them: no package's type may take one.
RESERVED: Final = {config.OPS_JOB_TYPE: "offload's own ops job type (lambdas/lifecycle/ops_jobs/job.py)"}


class JobTypeClashError(ValueError):
    """Two packages define a type of the same name, or a package a name the lifecycle reserves."""


def type_owners(packages: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """Each type of the built-in package and of `packages`: name -> (package, module). JobTypeClashError,
    naming both, for a name two packages define or one the lifecycle reserves."""
    owners: dict[str, tuple[str, str]] = {}
    for package in (BUILTIN_PACKAGE, *packages):
        for name, module in type_modules(package).items():
            if name in RESERVED:
                raise JobTypeClashError(f"job type {name!r} of {package} has the name of {RESERVED[name]}")
            earlier = owners.setdefault(name, (package, module))[0]
            if earlier != package:
                which = (
                    f"a built-in type ({earlier})" if earlier == BUILTIN_PACKAGE else f"a type of {earlier}"
                )
                raise JobTypeClashError(f"job type {name!r} of {package} has the name of {which}")
    return owners


def register_job_types(packages: Iterable[str] = ()) -> None:
    """Register the built-in types and those of `packages` (idempotent)."""
    for name, (_, module) in type_owners(packages).items():
        registry.register_module(name, module)
