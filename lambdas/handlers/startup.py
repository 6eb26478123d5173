"""A function's modules load without the cycle collector, and what they loaded is never scanned again.

Each handler module imports this module before anything else, which turns the collector off, and
calls `loaded()` on its last line, which moves every object alive then into the permanent generation
(`gc.freeze`) and turns the collector back on. Loading a function creates 45,000-55,000 objects that
live as long as the process (modules, classes, functions, validators); the collector, triggered by the
allocation count, scanned them over and over while they loaded and found few to free. Frozen, they are
not scanned by later collections either; the few garbage objects are frozen with them, never freed.
What it gains, and when to remove it: docs/decisions/gc-frozen-at-start.md (`make bench`, "trick: gc").
"""

import gc

gc.disable()  # before any import, this module's own included


def loaded() -> None:
    """The handler module has loaded: keep its objects out of every later collection, collect again."""
    gc.freeze()
    gc.enable()


# A SnapStart function's restore hook (lambdas.handlers.snapshot): registered by every function, run
# only where Lambda restores a snapshot.
from lambdas.handlers import snapshot  # noqa: E402

snapshot.register()
