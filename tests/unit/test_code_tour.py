"""docs/code-tour.md walks `POST /jobs` → `done` and a schedule firing → `done`, each in at most 12 hops,
each hop a `file:symbol`. Every symbol the tour names is found by importing its file's module and
reading the symbol from it, so a module moved or a function renamed fails here, and a rewrite of file
paths (`lambdas/lifecycle/x.py` → `lambdas/lifecycle/<group>/x.py`) keeps the tour resolving. Seen to
fail with `Worker.process` written as `Worker.proces`, and with a thirteenth hop in the first tour."""

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "docs" / "code-tour.md"
NAMED = re.compile(r"`(?P<file>[\w/]+\.py):(?P<symbol>[\w.]+)`")
HOP = re.compile(r"^\| (?P<hop>\d+) \| `[\w/]+\.py:[\w.]+` \|", re.MULTILINE)
MAX_HOPS = 12


def tours(text: str) -> dict[str, list[int]]:
    """Each `## ` section's hop numbers, by its heading."""
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return {s.splitlines()[0]: [int(m["hop"]) for m in HOP.finditer(s)] for s in sections}


def resolve(file: str, symbol: str, root: Path = ROOT) -> object:
    """The object `symbol` (`name` or `Class.method`) of the module at `file`, imported as the code
    imports it; LookupError when the file, the module or the name is not there."""
    if not (root / file).is_file():
        raise LookupError(f"{file} does not exist")
    module: ModuleType = importlib.import_module(file.removesuffix(".py").replace("/", "."))
    found: object = module
    for part in symbol.split("."):
        if not hasattr(found, part):
            raise LookupError(f"{file} has no {symbol}")
        found = getattr(found, part)
    return found


def _named() -> list[tuple[str, str]]:
    return list(dict.fromkeys((m["file"], m["symbol"]) for m in NAMED.finditer(TOUR.read_text())))


def test_two_tours_end_to_end_within_their_hops() -> None:
    walked = {heading: hops for heading, hops in tours(TOUR.read_text()).items() if hops}
    assert [heading.split(" ", 1)[0] for heading in walked] == ["1.", "2."]
    for heading, hops in walked.items():
        assert hops == list(range(1, len(hops) + 1)), heading
        assert 8 <= len(hops) <= MAX_HOPS, f"{heading}: {len(hops)} hops"


@pytest.mark.parametrize(("file", "symbol"), _named(), ids=[f"{f}:{s}" for f, s in _named()])
def test_every_symbol_the_tour_names_imports(file: str, symbol: str) -> None:
    assert callable(resolve(file, symbol))


def test_a_missing_name_is_seen() -> None:
    assert resolve("lambdas/store/jobs.py", "JobStore.put_new")
    for file, symbol in [
        ("lambdas/store/jobs.py", "JobStore.put_old"),
        ("lambdas/store/jobz.py", "JobStore"),
        ("lambdas/store/jobs.py", "put_new"),
    ]:
        with pytest.raises(LookupError):
            resolve(file, symbol)
    assert tours("## 1. a\n| 1 | `a.py:b` | x |\n| 2 | `a.py:c` | y |\n## 2. b\ntext\n") == {
        "1. a": [1, 2],
        "2. b": [],
    }
