"""The api's routes are handed what they work with (lambdas/handlers/rest/services.py, Powertools'
`Depends`): no route builds the store, the queue or the other services, reads the function's settings,
or reads the caller's identity from the event itself."""

import ast
import typing
from pathlib import Path

from lambdas.handlers import api
from lambdas.handlers.rest import services

ROOT = Path(__file__).resolve().parents[2]
ROUTE_MODULES = sorted((ROOT / "lambdas" / "handlers" / "routes").glob("*.py"))
# What the services and the caller are built from: only `rest.services` imports these.
STORES = "lambdas.store"
BUILDERS = {
    "lambdas.models.settings",
    "lambdas.handlers.rest.identity.caller_of",
    "lambdas.handlers.rest.identity.iam_caller_of",
}
# The routes that act for nobody: the document and the console's static files.
CALLERLESS = {"/openapi.json", "/console", "/console/<file>"}


def _imported(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_route_module_builds_a_service_or_reads_the_caller_itself() -> None:
    """Seen to fail with `routes/jobs.py`'s `list_deliveries` building its `DeliveryLog` from the
    settings again (`from lambdas.store.deliveries import DeliveryLog`), and with `routes/limits.py`
    calling `settings.api()` for its own `Limits`."""
    offenders = {}
    for path in [*ROUTE_MODULES, ROOT / "lambdas" / "handlers" / "api.py"]:
        tree = ast.parse(path.read_text())
        names = {n for n in _imported(tree) if n.startswith(STORES) or n in BUILDERS}
        names |= {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "current_event"
        }
        if path.name == "api.py":  # its OpenAPI document names the deployment's job packages
            names.discard("lambdas.models.settings")
        if names:
            offenders[path.name] = sorted(names)
    assert offenders == {}


def test_every_route_that_acts_for_a_caller_is_handed_it() -> None:
    """Each route the api serves for a caller declares the injected `RequestCaller`. Seen to fail with
    `get_limits` taking no `caller` parameter and reading it with `services.caller(router)` again."""
    routes = api.app._static_routes + api.app._dynamic_routes
    without = []
    for route in routes:
        if route.path in CALLERLESS:
            continue
        hints = typing.get_type_hints(route.func, include_extras=True)
        if services.RequestCaller not in hints.values():
            without.append(f"{route.method} {route.path}")
    assert len(routes) > 20
    assert without == []
