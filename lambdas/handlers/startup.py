"""A function's modules load without the cycle collector, and what they loaded is never scanned again;
two Powertools packages load only the modules a function uses.

Each handler module imports this module before anything else, which turns the collector off, and
calls `loaded()` on its last line, which moves every object alive then into the permanent generation
(`gc.freeze`) and turns the collector back on. Loading a function creates 45,000-55,000 objects that
live as long as the process (modules, classes, functions, validators); the collector, triggered by the
allocation count, scanned them over and over while they loaded and found few to free (what that cost
is measured in docs/performance.md, "Cold start and first call"). Frozen, they are not scanned by later
collections either. The few garbage objects are frozen with them, never freed.

Powertools' `event_handler` and `utilities.data_classes` packages import, in their `__init__`, every
resolver (AppSync's with asyncio, Bedrock's, VPC Lattice's, ...) and every event source's classes; the
api uses one resolver and one event class, the queue consumers the SQS classes. This module registers
the two packages without running their `__init__` (`defer_package_init`): a submodule loads when it is
imported or named, and the names in `_DEFERRED` (what this code and the resolver itself import from
the packages) load from their submodule. Any other name runs the package's `__init__` then, in full,
so code that asks for more gets what Powertools defines, only later.
"""

import gc

gc.disable()  # before any import, this module's own included

import ast  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from threading import RLock  # noqa: E402

# Deferred packages: Powertools' packages that re-export every resolver and every event source's classes.
DEFERRED: tuple[str, ...] = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.utilities.data_classes",
)
_lock = RLock()


def reexports(package: str, source: str) -> dict[str, str]:
    """{name: submodule} of the names an `__init__`'s source imports from its package's submodules."""
    found = {}
    for statement in ast.parse(source).body:
        if not isinstance(statement, ast.ImportFrom) or statement.module is None:
            continue
        if statement.level == 1:
            submodule = statement.module
        elif statement.level == 0 and statement.module.startswith(f"{package}."):
            submodule = statement.module.removeprefix(f"{package}.")
        else:
            continue
        found.update({alias.asname or alias.name: submodule for alias in statement.names})
    return found


def defer_package_init(package: str) -> None:
    """Register `package` with its `__init__` not yet run (a no-op once it is imported): a submodule,
    or a name the `__init__` imports from one, loads on its own; any other attribute runs the
    `__init__` first."""
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)  # imports the parent packages
    if spec is None or spec.loader is None or spec.origin is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader, origin = spec.loader, Path(spec.origin)
    names: dict[str, str] = {}  # read from the __init__'s source on the first lookup

    def __getattr__(name: str) -> object:  # the module's own (PEP 562)
        with _lock:
            if not names:
                names.update(reexports(package, origin.read_text(encoding="utf-8")))
            if name in names and "__getattr__" in vars(module):
                return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            if vars(module).pop("__getattr__", None) is not None:
                loader.exec_module(module)  # Powertools' own __init__, now, in full
        try:
            return vars(module)[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[package] = module
    parent, _, child = package.rpartition(".")
    setattr(sys.modules[parent], child, module)


def loaded() -> None:
    """The handler module has loaded: keep its objects out of every later collection, collect again."""
    gc.freeze()
    gc.enable()


for _package in DEFERRED:
    defer_package_init(_package)

# A SnapStart function's restore hook (lambdas.handlers.snapshot): registered by every function, run
# only where Lambda restores a snapshot.
from lambdas.handlers import snapshot  # noqa: E402

snapshot.register()
