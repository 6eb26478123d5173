"""A function's modules load without the cycle collector, and what they loaded is never scanned again.

Each handler module imports this module before anything else, which turns the collector off, and
calls `loaded()` on its last line, which moves every object alive then into the permanent generation
(`gc.freeze`) and turns the collector back on. Loading a function creates 45,000-55,000 objects that
live as long as the process (modules, classes, functions, validators); the collector, triggered by the
allocation count, scanned them over and over while they loaded and found few to free (what that cost
is measured in docs/performance.md, "Cold start and first call"). Frozen, they are not scanned by later
collections either. The few garbage objects are frozen with them, never freed.
"""

import gc

gc.disable()


def loaded() -> None:
    """The handler module has loaded: keep its objects out of every later collection, collect again."""
    gc.freeze()
    gc.enable()
