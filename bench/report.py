"""One benchmark figure: a ratio against its goal, with the raw medians it was computed from."""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


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
