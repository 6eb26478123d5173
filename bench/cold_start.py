"""Cold start: a fresh interpreter importing each handler from a bundle laid out as the Lambda asset.

The bundle is built the way `infra.bundling` builds the asset (pip target + `lambdas/`), for this
machine's Python, since the real asset's wheels are for arm64 and 3.14. Two variants, interleaved:
- with byte code, as the asset ships it (`compile_bytecode`, natively here; pyodide writes the asset's);
- without, what a bundle with no byte code would cost: the same tree read with `-X pycache_prefix`
  pointing at an empty directory and `-B`, so every module compiles on every start, as on Lambda's
  read-only /var/task.
Checked: the byte code's gain, source only over with byte code, which must stay >= 1.1 (it pays
or goes). Printed, not goals: each import against `import boto3` from the same bundle, with byte
code. Each figure is measured inside the child, around the import only, so interpreter start-up
counts on neither side.

The ratios are of the child's CPU time; its wall time is printed beside it. An import reads
files that are in the page cache and does no other I/O, so its wall time is its CPU time plus
waiting for a core, and on this shared 2-core machine the waiting is most of it: `import boto3`
measured 128-468 ms of wall time within an hour while its CPU time stayed at 102-122 ms. CPU-time
ratios move a few hundredths between runs, wall-time ratios tenths.

Shown beside them, not goals: each function whose import loads pydantic, imported again with those
pydantic modules imported before the clock, so that what pydantic costs it and what offload's own
modules cost are told apart.
"""

import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from bench.report import Figure, median, ms
from infra import bundling

# Every function's module (lambdas/handlers; a worker group's function runs the worker's module) and
# what its import was once held to against `import boto3`: printed beside it, no longer a goal, since no
# function with validation reaches it (its goal is against its peer, bench.first_call).
HANDLERS = {"api": 1.3, "worker": 1.3, "dead_letter": 1.3, "recovery": 1.3, "schedules": 1.3}
# The byte-code build pays while a source-only bundle costs at least this much more to import
# (docs/decisions/bytecode-for-python314.md).
BYTECODE_PAYS = 1.1
Sample = tuple[float, float]  # (wall, CPU) seconds
ROUNDS = 9
_PROBE = (
    "import time; t, c = time.perf_counter(), time.process_time(); import {module}\n"
    "print(time.perf_counter() - t, time.process_time() - c)"
)
PYDANTIC = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")
_LISTED = (
    "import sys, json; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {packages!r})))"
)
_PRELOADED = "import importlib\nfor name in {modules!r}: importlib.import_module(name)\n"


def bundle_dir() -> Path:
    """The host-platform bundle, built once per content of requirements.txt and `lambdas/`."""
    target = Path(tempfile.gettempdir()) / f"offload-bench-bundle-{bundling.source_hash()[:16]}"
    if target.is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="offload-bench-building-"))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--only-binary=:all:", "--no-compile", "-r", str(bundling.REPO_ROOT / bundling.REQUIREMENTS)]
    subprocess.run([*command, "-t", str(building)], check=True, capture_output=True)
    bundling.copy_package(building)
    bundling.compile_bytecode(building, sys.executable)
    building.rename(target)
    return target


def lambda_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """What a function's process sees: no site-packages of ours, tracing off as outside X-Ray's sample."""
    return {
        "PATH": "/usr/bin:/bin",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "CRITICAL",
        "POWERTOOLS_METRICS_DISABLED": "true",
        **(extra or {}),
    }


def python_in(compiled: bool, empty: Path) -> list[str]:
    """The interpreter command: no site-packages (the `-c` code puts the bundle first on the path)."""
    flags = ["-S", "-E"] if compiled else ["-S", "-E", "-B", "-X", f"pycache_prefix={empty}"]
    return [sys.executable, *flags]


def run_in_bundle(bundle: Path, code: str, compiled: bool, env: dict[str, str]) -> str:
    with tempfile.TemporaryDirectory() as empty:
        command = [
            *python_in(compiled, Path(empty)),
            "-c",
            f"import sys; sys.path[:0] = [{str(bundle)!r}]\n{code}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"bundle probe failed:\n{result.stderr[-2000:]}")
    return result.stdout.strip().splitlines()[-1]


def _import_seconds(bundle: Path, module: str, compiled: bool, first: tuple[str, ...] = ()) -> Sample:
    """(wall, CPU) seconds of the import; the modules `first` are imported before the clock."""
    code = (_PRELOADED.format(modules=list(first)) if first else "") + _PROBE.format(module=module)
    wall, cpu = run_in_bundle(bundle, code, compiled, lambda_env()).split()
    return float(wall), float(cpu)


def pydantic_modules(bundle: Path, module: str) -> tuple[str, ...]:
    """The pydantic modules that importing `module` loads, in a fresh process."""
    code = f"import {module}\n" + _LISTED.format(packages=PYDANTIC)
    return tuple(json.loads(run_in_bundle(bundle, code, True, lambda_env())))


def cpu_ratio(name: str, measured: Sample, floor: Sample, limit: float, what: tuple[str, str]) -> Figure:
    """`measured` over `floor` by CPU time, the checked ratio; the wall-time figures beside it."""
    (wall, cpu), (floor_wall, floor_cpu) = measured, floor
    detail = (
        f"CPU {what[0]} {ms(cpu)} / {what[1]} {ms(floor_cpu)}; "
        f"wall {ms(wall)} / {ms(floor_wall)} = {wall / floor_wall:.2f}x"
    )
    return Figure(name, cpu / floor_cpu, limit, detail)


def medians(samples: list[Sample]) -> Sample:
    return median([w for w, _ in samples]), median([c for _, c in samples])


def measure() -> list[Figure]:
    bundle = bundle_dir()
    variants = [("boto3", True)] + [(f"lambdas.handlers.{h}", c) for h in HANDLERS for c in (True, False)]
    samples: dict[tuple[str, bool], list[Sample]] = {v: [] for v in variants}
    pydantic = {h: pydantic_modules(bundle, f"lambdas.handlers.{h}") for h in HANDLERS}
    loaded_first: dict[str, list[Sample]] = {h: [] for h in HANDLERS if pydantic[h]}
    for _ in range(ROUNDS):
        for module, compiled in variants:
            samples[(module, compiled)].append(_import_seconds(bundle, module, compiled))
        for handler, samples_of in loaded_first.items():
            module = f"lambdas.handlers.{handler}"
            samples_of.append(_import_seconds(bundle, module, True, pydantic[handler]))
    floor = medians(samples[("boto3", True)])
    figures = []
    for handler, limit in HANDLERS.items():
        for compiled in (True, False):
            shipped = "with byte code" if compiled else "source only"
            measured = medians(samples[(f"lambdas.handlers.{handler}", compiled)])
            figure = cpu_ratio(
                f"cold start {handler} ({shipped})", measured, floor, limit, (handler, "boto3")
            )
            figures.append(replace(figure, detail=f"{figure.detail}; medians of {ROUNDS}", checked=False))
        source_only = medians(samples[(f"lambdas.handlers.{handler}", False)])[1]
        with_bytecode = medians(samples[(f"lambdas.handlers.{handler}", True)])[1]
        figures.append(
            Figure(
                f"cold start {handler}: byte code's gain",
                source_only / with_bytecode,
                BYTECODE_PAYS,
                f"CPU source only {ms(source_only)} / with byte code {ms(with_bytecode)}; medians of {ROUNDS}",
                at_least=True,
            )
        )
        if handler in loaded_first:
            figure = cpu_ratio(
                f"cold start {handler}, pydantic loaded first",
                medians(loaded_first[handler]),
                floor,
                limit,
                (handler, "boto3"),
            )
            loaded = f"{len(pydantic[handler])} pydantic modules imported before the clock"
            figures.append(
                replace(figure, detail=f"{figure.detail}; {loaded}; medians of {ROUNDS}", checked=False)
            )
    return figures


def shipped_note() -> str:
    interpreter = bundling.matching_interpreter()
    version = bundling.LAMBDA_PYTHON_VERSION
    if interpreter is None:
        return f"note: no python{version} here, so `cdk synth` compiles the asset with pyodide's CPython {version} (node)"
    return f"note: `cdk synth` here compiles the asset with {interpreter} (python{version})"
