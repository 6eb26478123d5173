"""The asset ships byte code only when it was compiled by the runtime's Python version."""

import importlib.util
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from infra import bundling


def test_the_build_interpreter_compiles_when_its_version_is_the_runtimes(monkeypatch):
    here = platform.python_version().rsplit(".", 1)[0]
    assert bundling.matching_interpreter(here) == sys.executable


def test_another_version_is_looked_up_on_path_and_none_means_pyodide_compiles(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bundling.matching_interpreter("3.99") is None
    fake = tmp_path / "python3.99"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert bundling.matching_interpreter("3.99") == str(fake)


def test_compiled_byte_code_is_used_without_reading_the_sources_again(tmp_path: Path):
    (tmp_path / "probe.py").write_text("VALUE = 1\n")
    bundling.compile_bytecode(tmp_path, sys.executable)
    cached = Path(importlib.util.cache_from_source(str(tmp_path / "probe.py")))
    assert cached.is_file()
    # An unchecked hash-based .pyc: the (changed) source is never consulted again.
    (tmp_path / "probe.py").write_text("VALUE = 2\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import probe; print(probe.VALUE)"
    out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_a_module_that_does_not_compile_fails_the_bundle(tmp_path: Path):
    (tmp_path / "broken.py").write_text("def (:\n")
    with pytest.raises(RuntimeError, match="could not compile"):
        bundling.compile_bytecode(tmp_path, sys.executable)


def test_without_a_native_python_of_the_runtimes_version_pyodide_writes_its_byte_code(tmp_path: Path):
    (tmp_path / "probe.py").write_text("VALUE = 1\n")
    bundling.compile_bytecode(tmp_path, None)
    version = bundling.LAMBDA_PYTHON_VERSION.replace(".", "")
    assert [p.name for p in (tmp_path / "__pycache__").iterdir()] == [f"probe.cpython-{version}.pyc"]


def test_a_module_that_pyodide_cannot_compile_fails_the_bundle(tmp_path: Path):
    (tmp_path / "broken.py").write_text("def (:\n")
    with pytest.raises(RuntimeError, match="could not compile"):
        bundling.compile_bytecode(tmp_path, None)
