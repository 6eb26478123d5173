"""The built-in job types: every module in this package that defines `JOB_TYPE` is one.

Adding a type is adding a module here (see docs/job-types.md); nothing else lists the types. Modules
whose name starts with `_` are helpers, not types.
"""

import importlib
import pkgutil

from lambdas.jobs import registry


def builtin_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def register_builtin_types() -> None:
    """Register every built-in type (idempotent). Modules are imported here, their heavy deps on use."""
    for module_name in builtin_modules():
        module = importlib.import_module(f"{__name__}.{module_name}")
        job_type = getattr(module, "JOB_TYPE", None)
        if job_type is not None and job_type.name not in registry.names():
            registry.register(job_type)
