"""Fetch the pyodide wheel of pydantic-core that tests/py314 needs, once: `python -m tests.py314.wheels DIR`.

The version is the installed pydantic-core's (pydantic pins it exactly); the platform is the one the pinned
pyodide was built for (its lockfile's `abi_version`), so both follow their own pins and nothing is written
twice.
"""

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYODIDE_LOCK = REPO / "node_modules" / "pyodide" / "pyodide-lock.json"


def platform() -> str:
    info = json.loads(PYODIDE_LOCK.read_text())["info"]
    return f"pyemscripten_{info['abi_version']}_{info['arch']}"


def download(directory: Path) -> None:
    pin = f"pydantic-core=={version('pydantic-core')}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            platform(),
            "--python-version",
            "3.14",
            "--implementation",
            "cp",
            "--abi",
            "cp314",
            "--dest",
            str(directory),
            pin,
        ],
        check=True,
    )


if __name__ == "__main__":
    download(Path(sys.argv[1]))
