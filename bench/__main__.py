"""`make bench` (python -m bench): every goal as a ratio with the raw medians behind it.

    python -m bench                 all figures
    python -m bench --check         the same, exit status 1 when a goal is missed
    python -m bench --only submit   one group (cold_start, first_call, calls, concurrency, submit, local,
                                    start_times, limits, schedules, bursts,
                                    tricks)
    python -m bench --load 4        the same at a load average of about 4: background workers add what
                                    the machine's own load lacks (bench/load.py)
    python -m bench --write         the same, and the figures written into docs/performance.md

Every figure's line ends with the 1-minute load average sampled while its group ran.

Each ratio's two sides are measured in the same run, interleaved, against equal floors; see each
module's docstring for what exactly is compared. Nothing is printed but the figures.
"""

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable
from contextlib import ExitStack, redirect_stderr, redirect_stdout
from pathlib import Path

from bench.load import LoadGenerator, LoadMonitor
from bench.report import Figure, markdown, write_into

PAGE = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
GROUPS = (
    "cold_start",
    "first_call",
    "calls",
    "concurrency",
    "submit",
    "local",
    "start_times",
    "limits",
    "schedules",
    "bursts",
    "tricks",
)


def _in_stack(measure_name: str) -> Callable[[], list[Figure]]:
    def run() -> list[Figure]:
        import importlib

        from bench.stack import running_stack

        measure = importlib.import_module(f"bench.{measure_name}").measure
        with running_stack() as stack:
            figures: list[Figure] = measure(stack)
            return figures

    return run


def _group(name: str) -> Callable[[], list[Figure]]:
    if name == "cold_start":
        from bench import cold_start

        return cold_start.measure
    if name == "local":
        from bench import local_throughput

        return local_throughput.measure
    if name == "start_times":
        from bench import start_times

        return start_times.measure
    if name == "bursts":
        from bench import bursts

        return bursts.measure
    return _in_stack(name)


def _quietly(measure: Callable[[], list[Figure]]) -> list[Figure]:
    """The functions' log lines, metric blobs and warnings go nowhere; an error still surfaces."""
    with (
        open(os.devnull, "w") as devnull,
        redirect_stdout(devnull),
        redirect_stderr(devnull),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        return measure()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--only", choices=GROUPS, action="append", help="run these groups only")
    parser.add_argument(
        "--load", type=float, metavar="N", help="top the 1-minute load average up to N while measuring"
    )
    parser.add_argument("--write", action="store_true", help="write the figures into docs/performance.md")
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    missed = []
    measured: list[tuple[Figure, str]] = []
    at_load = f" at a target load of {args.load:g}" if args.load else ""
    groups = args.only or GROUPS
    with ExitStack() as running:
        generator = running.enter_context(LoadGenerator(args.load)) if args.load else None
        if generator is not None:
            reached = generator.warm_up()
            print(f"load generator: target {args.load:g}, 1-minute load average {reached:.1f} after warm-up")
        monitor = running.enter_context(LoadMonitor(generator))
        for name in groups:
            since = time.monotonic()
            figures = _quietly(_group(name))
            load = monitor.window(since).text()
            for figure in figures:
                print(f"{figure.line()}  [{load}]", flush=True)
                measured.append((figure, load))
                if figure.checked and not figure.met:
                    missed.append(figure.name)
    if "cold_start" in groups:
        from bench.cold_start import shipped_note

        print(shipped_note())
    if args.write:
        ran = f"Measured by `python -m bench`{at_load}, groups {', '.join(groups)}; missed: {', '.join(missed) or 'none'}."
        write_into(PAGE, markdown(measured, ran))
    if args.check and missed:
        print(f"missed: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
