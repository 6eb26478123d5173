"""What each speed trick on the main path gains, on the figure it was made for: the function's import +
first call (bench.first_call) with the trick as shipped, against the same bundle with the trick taken
out, interleaved in one run: the tricks kept, each with its record in docs/decisions/ (gc:
gc-frozen-at-start.md; lazy tracer: lazy-tracer.md).

A variant is the bundle's `lambdas/` package copied and edited (`TRICKS`: file, the text as shipped,
the text without the trick), byte-compiled, and put ahead of the bundle on the path. A trick pays while
it gains >= 10 % of that function's cold start (without / with >= 1.1); one that stops paying goes.
The tracer's variant builds Powertools' Tracer at import, as a function that does not defer it does;
tracing is off in the bench, so it shows what an unsampled cold start saves.
"""

import hashlib
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import first_call
from bench.report import Figure, median, ms
from bench.stack import Stack
from infra import bundling

ROUNDS = 7
PAYS = 1.1


Edit = tuple[str, str, str]  # a file under lambdas/, its text as shipped, the text without the trick


@dataclass(frozen=True)
class Trick:
    name: str
    functions: tuple[str, ...]  # the functions it was made for
    edits: tuple[Edit, ...]


TRICKS = (
    Trick(
        "gc",
        ("api", "worker"),
        (
            ("handlers/startup.py", "gc.disable()  # before any import, this module's own included\n", "\n"),
            ("handlers/startup.py", "    gc.freeze()\n    gc.enable()\n", "    pass\n"),
        ),
    ),
    Trick(
        "lazy tracer",
        ("api", "worker"),
        (
            (
                "observability.py",
                "tracer = LazyTracer(service=config.SERVICE_NAME)\n",
                "tracer = LazyTracer(service=config.SERVICE_NAME)\ntracer._real()\n",
            ),
        ),
    ),
)


def variant_dir(trick: Trick) -> Path:
    """The bundle's `lambdas/` with `trick` taken out, compiled; built once per its content."""
    digest = hashlib.sha256((bundling.source_hash() + repr(trick)).encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"offload-bench-trick-{digest}"
    if target.is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="offload-bench-trick-building-"))
    bundling.copy_package(building)
    for path, shipped, without in trick.edits:
        edited = building / "lambdas" / path
        text = edited.read_text()
        if shipped not in text:
            shutil.rmtree(building)
            raise RuntimeError(f"{trick.name}: lambdas/{path} no longer holds {shipped!r}")
        edited.write_text(text.replace(shipped, without, 1))
    bundling.compile_bytecode(building, sys.executable)
    building.rename(target)
    return target


def measure(stack: Stack) -> list[Figure]:
    cases = first_call._cases(stack)
    variants = {trick.name: variant_dir(trick) for trick in TRICKS}
    samples: dict[tuple[str, str, bool], list[float]] = {}
    for _ in range(ROUNDS):
        stack.drain()
        for trick in TRICKS:
            for function in trick.functions:
                handler, event, calls, old_id = cases[function]
                code = first_call._HANDLER.format(module=handler.rsplit(".", 1)[0])
                ahead = f"import sys; sys.path.insert(0, {str(variants[trick.name])!r})\n"
                for shipped, side in ((True, code), (False, ahead + code)):
                    (_, imported), (_, first) = first_call._run(stack, handler, side, event, calls, old_id)
                    samples.setdefault((trick.name, function, shipped), []).append(imported + first)
    figures = []
    for trick in TRICKS:
        for function in trick.functions:
            with_it = median(samples[(trick.name, function, True)])
            without = median(samples[(trick.name, function, False)])
            detail = (
                f"CPU without {ms(without)} / with {ms(with_it)}, import + first call; medians of {ROUNDS}"
            )
            figures.append(
                Figure(f"trick: {trick.name}, {function}", without / with_it, PAYS, detail, at_least=True)
            )
    return figures
