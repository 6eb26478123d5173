"""The part of tests/py314/run_pyodide.js that runs inside pyodide's CPython 3.14.

The Lambda asset's pure-Python dependencies are read from the test virtualenv's site-packages (the
same pinned versions the asset bundles; pure Python does not depend on the interpreter's version),
pydantic-core from its WebAssembly wheel for pyodide (PyPI's, the version pydantic pins). A module
that needs a native library pyodide cannot load from here (Pillow) is reported as not importable,
with the library's name; anything else that fails to import (a syntax error, a name 3.14 removed)
fails the run.
"""

import importlib
import importlib.abc
import os
import sys
import traceback
import zipfile
from pathlib import Path

# Native code in the asset's dependencies with no wheel for pyodide here: Pillow (no pyodide wheel on PyPI).
NATIVE = {"PIL": "Pillow"}


class _NoNative(importlib.abc.MetaPathFinder):
    """The virtualenv's Pillow is built for CPython 3.11 on x86-64: say so instead of half-loading it."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in NATIVE:
            raise ModuleNotFoundError(f"{NATIVE[top]} is native and has no pyodide wheel here", name=top)
        return


def _prepare() -> None:
    unpacked = Path("/unpacked")
    for wheel in sorted(Path("/wheels").glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(unpacked)
    sys.path[:0] = ["/repo", str(unpacked)]
    sys.path.append("/site")
    sys.meta_path.insert(0, _NoNative())
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the virtualenv's plugins include native ones


def _modules(root: str) -> list[str]:
    base = Path("/repo")
    names = []
    for path in sorted((base / root).rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def import_all(root: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(imported, not importable for a native library: why, failed: traceback)."""
    imported, native, failed = [], {}, {}
    for name in _modules(root):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] in NATIVE:
                native[name] = str(error)
            else:
                failed[name] = traceback.format_exc()
        except BaseException:
            failed[name] = traceback.format_exc()
        else:
            imported.append(name)
    return imported, native, failed


def main(root: str, pytest_args: list[str]) -> int:
    _prepare()
    version = ".".join(str(part) for part in sys.version_info[:3])
    imported, native, failed = import_all(root)
    print(f"CPython {version} ({sys.platform}): {len(imported)} modules of {root}/ imported")
    for name, why in native.items():
        print(f"  not importable here: {name} ({why})")
    for name, trace in failed.items():
        print(f"FAILED to import {name} on {version}:\n{trace}")
    code = 1 if failed else 0
    if pytest_args:
        import pytest

        code = max(code, int(pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *pytest_args])))
    return code
