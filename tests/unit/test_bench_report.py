"""`python -m bench --write`: the figures of a run replace the last ones in docs/performance.md."""

from pathlib import Path

import pytest

from bench.report import BEGIN, END, Figure, markdown, write_into

PAGE = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


def test_a_run_s_checked_figures_replace_the_last_ones_and_nothing_else(tmp_path: Path) -> None:
    """Breaks when `write_into` keeps the old block, or `markdown` writes the figures shown beside."""
    page = tmp_path / "page.md"
    page.write_text(f"# before\n{BEGIN}\nold figures\n{END}\n## after\n")
    kept = Figure("api vs peer", 1.05, 1.15, "CPU api 400 ms / peer 380 ms")
    shown = Figure("api vs bare", 1.5, 1.15, "CPU api 400 ms / bare 266 ms", checked=False)
    write_into(page, markdown([(kept, "load 4.1"), (shown, "load 4.1")], "Measured by a test."))
    text = page.read_text()
    assert "old figures" not in text
    assert text.startswith("# before\n")
    assert text.endswith(f"{END}\n## after\n")
    assert "| api vs peer | 1.05x | <= 1.15x | ok | CPU api 400 ms / peer 380 ms | load 4.1 |" in text
    assert "api vs bare" not in text


def test_a_page_without_the_block_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# no block\n")
    with pytest.raises(ValueError, match="no figures block"):
        write_into(page, "figures")


def test_the_performance_page_holds_the_block_and_stays_short() -> None:
    text = PAGE.read_text()
    assert BEGIN in text
    assert END in text
    assert len(text.splitlines()) <= 150
