"""The built-in job types: every module in this package that defines `JOB_TYPE` is one.

Adding a type is adding a module named after it here (see docs/job-types.md); nothing else lists the
types. Modules whose name starts with `_` are helpers, not types.
"""

import pkgutil

from lambdas.jobs import registry


def builtin_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def register_builtin_types() -> None:
    """Register every built-in type by its module's name (idempotent); the module loads on first lookup."""
    for module_name in builtin_modules():
        registry.register_module(module_name, f"{__name__}.{module_name}")
