"""Where the running local runtime says how to reach it (`.local/runtime.json`), without importing it.

`offload` reads the file to find the runtime; the runtime writes it when it is up and removes it when
it stops, but only while it still names the runtime's own process: a second runtime that failed to
start never removes the first one's file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
STATE_FILE = REPO_ROOT / ".local" / "runtime.json"


def write_state(path: Path, document: dict[str, Any]) -> bool:
    """Write the state (with this process's pid), unless another live runtime's state is there.

    Returns whether it was written. The file holds the API key: it is created readable by its owner only.
    """
    owner = _owner(path)
    if owner is not None and owner != os.getpid() and _alive(owner):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump({**document, "pid": os.getpid()}, out)
    partial.replace(path)
    return True


def remove_state(path: Path) -> None:
    """Remove the state file if this process wrote it, and only then."""
    if _owner(path) == os.getpid():
        path.unlink(missing_ok=True)


def _owner(path: Path) -> int | None:
    try:
        pid = json.loads(path.read_text()).get("pid")
    except (OSError, ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True
