"""The example job type printed in docs/job-types.md, installed as a module the way a user would add it,
and the example tests printed beside it."""

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "job-types.md"
_BLOCK = re.compile(r"<!-- example-type: lambdas/jobs/types/(\w+)\.py -->\n```python\n(.*?)```", re.DOTALL)
_TESTS = re.compile(r"<!-- example-test: tests/(\w+)\.py -->\n```python\n(.*?)```", re.DOTALL)


def install_example_type(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Write the documented module into a directory that joins the types package; return its name."""
    import lambdas.jobs.types as types_package

    match = _BLOCK.search(DOC.read_text())
    assert match, "docs/job-types.md lost its example type"
    name, code = match.groups()
    (tmp_path / f"{name}.py").write_text(code)
    monkeypatch.setattr(types_package, "__path__", [*types_package.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, f"lambdas.jobs.types.{name}", raising=False)
    return name


def example_tests() -> dict[str, Callable[[], None]]:
    """The documented example tests, each by its name: a test function that takes no fixture."""
    match = _TESTS.search(DOC.read_text())
    assert match, "docs/job-types.md lost its example tests"
    module, code = match.groups()
    namespace: dict[str, Any] = {"__name__": module}
    exec(compile(code, f"docs/job-types.md ({module})", "exec"), namespace)
    return {name: test for name, test in namespace.items() if name.startswith("test_") and callable(test)}
