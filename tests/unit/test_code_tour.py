"""docs/code-tour.md names files and functions: each one exists, so the tour cannot point at code that
moved or was renamed. Seen to fail with a row naming `lambdas/lifecycle/reads.py`'s `child_ids` (it
moved to `parents.py`)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "docs" / "code-tour.md"
ROW = re.compile(r"^\| \d+ \| `(?P<file>[^`]+)` \| `(?P<name>[^`]+)` \|", re.MULTILINE)
# Prose after the tables names further functions as "`file`'s `name`".
PROSE = re.compile(r"`(?P<file>lambdas/[^`]+\.py)`'s `(?P<name>[^`]+)`")


def _named() -> list[tuple[str, str]]:
    text = TOUR.read_text()
    return [(m["file"], m["name"]) for pattern in (ROW, PROSE) for m in pattern.finditer(text)]


def defines(path: Path, name: str) -> bool:
    """`name` (a function, a class, or `Class.method`) is defined at the top of the module at `path`;
    for JavaScript, a `function name` declaration."""
    source = path.read_text()
    if path.suffix == ".js":
        return re.search(rf"^(export )?function {re.escape(name)}\(", source, re.MULTILINE) is not None
    scope: list[ast.stmt] = ast.parse(source).body
    for part in name.split("."):
        found = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == part
            ),
            None,
        )
        if found is None:
            return False
        scope = found.body
    return True


def test_the_tour_names_steps() -> None:
    assert len(_named()) >= 30


@pytest.mark.parametrize(("file", "name"), _named(), ids=[f"{f}:{n}" for f, n in _named()])
def test_every_function_the_tour_names_exists(file: str, name: str) -> None:
    path = ROOT / file
    assert path.is_file(), f"{file} does not exist"
    assert defines(path, name), f"{file} defines no {name}"


def test_a_missing_name_is_seen(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("class A:\n    def b(self): ...\ndef c(): ...\n")
    script = tmp_path / "s.js"
    script.write_text("export function shown(job) {}\n")
    assert defines(module, "A.b")
    assert defines(module, "c")
    assert not defines(module, "A.c")
    assert not defines(module, "b")
    assert defines(script, "shown")
    assert not defines(script, "hidden")
