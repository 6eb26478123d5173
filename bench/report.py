"""One benchmark figure: a ratio against its goal, with the raw medians it was computed from."""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# docs/performance.md's figures sit between these lines, written by `python -m bench --write`.
BEGIN = "<!-- figures: written by `make bench BENCH_ARGS=--write`; edits between these lines are lost -->"
END = "<!-- end of figures -->"


@dataclass(frozen=True)
class Figure:
    name: str
    ratio: float
    limit: float
    detail: str  # the raw figures behind the ratio
    at_least: bool = False  # the goal is a floor (>=) rather than a ceiling (<=)
    checked: bool = True  # False: shown for comparison, not a goal `--check` enforces
    unit: str = "x"

    @property
    def met(self) -> bool:
        # Counts divided by counts (16 calls / 3 against 5 + 1/3) may differ from their goal in the last bit.
        slack = 1e-9 * max(1.0, abs(self.limit))
        return self.ratio >= self.limit - slack if self.at_least else self.ratio <= self.limit + slack

    def line(self) -> str:
        goal = f"{'>=' if self.at_least else '<='} {self.limit:g}"
        verdict = ("ok" if self.met else "MISSED") if self.checked else "not a goal"
        return f"{self.name:<44} {self.ratio:6.2f}{self.unit}  (goal {goal}: {verdict})  {self.detail}"


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def ratio_figure(
    name: str, measured: tuple[str, Sequence[float]], floor: tuple[str, Sequence[float]], limit: float
) -> Figure:
    """`measured` over `floor`, both as medians of samples taken interleaved in the same run."""
    (label, samples), (floor_label, floor_samples) = measured, floor
    value, base = median(samples), median(floor_samples)
    detail = f"{label} {ms(value)} / {floor_label} {ms(base)}, medians of {len(samples)}"
    return Figure(name, value / base, limit, detail)


def markdown(measured: Sequence[tuple[Figure, str]], header: str) -> str:
    """The checked figures of one run as a table, each with the load its group ran at (the figures shown
    beside them are printed only)."""
    rows = [header, "", "| figure | measured | goal | | behind it | load |", "|---|---|---|---|---|---|"]
    for figure, load in measured:
        if not figure.checked:
            continue
        unit = figure.unit if figure.unit in ("x", "s") else f" {figure.unit.strip()}".rstrip()
        goal = f"{'>=' if figure.at_least else '<='} {figure.limit:g}{unit}"
        verdict = "ok" if figure.met else "**missed**"
        value = f"{figure.ratio:.2f}{unit}"
        rows.append(f"| {figure.name} | {value} | {goal} | {verdict} | {figure.detail} | {load} |")
    return "\n".join(rows)


def write_into(page: Path, text: str) -> None:
    """Replace what stands between BEGIN and END in `page` with `text`."""
    content = page.read_text()
    if BEGIN not in content or END not in content:
        raise ValueError(f"{page} has no figures block ({BEGIN!r} ... {END!r})")
    before, rest = content.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    page.write_text(f"{before}{BEGIN}\n{text}\n{END}{after}")
