"""The built-in job types. Each lives in its own module here and is listed in `_BUILTIN`."""

from lambdas.jobs import registry

_BUILTIN: tuple[str, ...] = ("send_email", "webhook_fanout", "webhook_delivery", "process_file")


def register_builtin_types() -> None:
    """Register every built-in type (idempotent). Modules are imported here, their heavy deps on use."""
    import importlib

    for module_name in _BUILTIN:
        module = importlib.import_module(f"{__name__}.{module_name}")
        if module.JOB_TYPE.name not in registry.names():
            registry.register(module.JOB_TYPE)
