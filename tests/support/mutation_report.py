"""`make mutate`'s summary: the kill rate of the mutants run, and each survivor with its diff.

Usage: python -m tests.support.mutation_report [--sample] [MUTANT_GLOB ...] (the globs `mutmut run` was
given; none means every mutant). `--sample` reports on the names `make mutate MUTATE_SAMPLE=N` chose
(`mutants/mutmut-sample.json`) and says which seed chose them. Killed counts mutants the tests failed
on, timed out on, or the type checker refused; a mutant no test reaches counts as surviving, since
nothing would notice it. Each package's rate and the overall one come with a 95 % Wilson interval: the
range of true kill rates a random sample of that size is consistent with (a full run's interval only
says how many mutants it was).
"""

import fnmatch
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.support.mutation_sample import SAMPLE_FILE

MUTMUT = str(Path(sys.executable).with_name("mutmut"))
KILLED = {"killed", "timeout", "caught by type check"}
NOT_RUN = {"not checked", "skipped", "check was interrupted by user"}
Z_95 = 1.959964


def wilson(killed: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion: honest near 0 and 1, where p ± z·se is not."""
    if total == 0:
        return 0.0, 1.0
    p = killed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def package(name: str) -> str:
    """`lambdas.store.queue.x_parse__mutmut_3` -> `lambdas.store`."""
    return ".".join(name.split(".")[:2])


def rate_line(label: str, statuses: list[str]) -> str:
    killed = sum(status in KILLED for status in statuses)
    low, high = wilson(killed, len(statuses))
    rate = 100 * killed / len(statuses)
    return f"{label}: {killed} of {len(statuses)} killed, {rate:.1f} % (95 % CI {100 * low:.1f} to {100 * high:.1f} %)"


def summary(judged: dict[str, str]) -> list[str]:
    """The overall kill rate and each package's, each with its interval."""
    lines = [rate_line("all", list(judged.values()))]
    for name in sorted({package(mutant) for mutant in judged}):
        lines.append(rate_line(name, [s for m, s in judged.items() if package(m) == name]))
    counts = Counter(judged.values())
    lines.append("by status: " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    return lines


def statuses(globs: list[str], names: set[str] | None = None) -> dict[str, str]:
    listing = subprocess.run(
        [MUTMUT, "results", "--all", "true"], capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if not name or (names is not None and name not in names):
            continue
        if not globs or any(fnmatch.fnmatch(name, g) for g in globs):
            found[name] = status
    return found


def main(argv: list[str]) -> int:
    names = None
    if argv[:1] == ["--sample"]:
        argv = argv[1:]
        sample = json.loads(SAMPLE_FILE.read_text())
        names = set(sample["names"])
        population = sum(sample["population"].values())
        print(
            f"sample of {len(names)} from {population} mutants, seed {sample['seed']}, commit {sample['commit']}"
        )
    found = statuses(argv, names)
    judged = {name: status for name, status in found.items() if status not in NOT_RUN}
    if not judged:
        print("no mutants have been run; run `make mutate` first")
        return 1
    if len(judged) < len(found):
        print(f"{len(found) - len(judged)} chosen mutants not run yet (left out of the figures)")
    print("\n".join(summary(judged)))
    survivors = sorted(name for name, status in judged.items() if status not in KILLED)
    for name in survivors:
        print(f"\n--- {name}: {judged[name]}")
        shown = subprocess.run([MUTMUT, "show", name], capture_output=True, text=True, check=False)
        print(shown.stdout.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
