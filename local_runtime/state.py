"""Where the running local runtime says how to reach it (`.local/runtime.json`), without importing it.

`offload` reads the file to find the runtime; the runtime writes it when it is up and removes it when
it stops, but only while it still names the runtime's own process: a second runtime that failed to
start never removes the first one's file.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
STATE_FILE = REPO_ROOT / ".local" / "runtime.json"
