"""`make mutate MUTATE_SAMPLE=N`: choose N of mutmut's mutants at random, stratified by source file.

A full run of `lambdas/lifecycle/` and `lambdas/store/` is thousands of mutants (hours of CPU); a random
sample gives the kill rate with a known error instead. The sample is stratified: each source file gets
its share of N in proportion to its mutants (the fraction rounded up or down at random), so every file
is represented and every mutant is equally likely to be chosen: the sample's kill rate estimates the
whole population's without weights. Choosing is seeded: the
same seed over the same mutants picks the same names. With no seed a fresh one is drawn and printed,
so a figure is never the best of several tries but can always be reproduced.

Usage: python -m tests.support.mutation_sample N [SEED] [MUTANT_GLOB ...]
Generates the mutants (mutmut's own generation, as `mutmut run` starts with), writes the chosen names
to `mutants/mutmut-sample.json` (with the seed, population and commit) and prints the seed.
`python -m tests.support.mutation_sample --names` prints the chosen names, one a line, for `mutmut run`.
"""

import fnmatch
import json
import random
import subprocess
import sys
from pathlib import Path

SAMPLE_FILE = Path("mutants") / "mutmut-sample.json"


def allocate(sizes: dict[str, int], total: int, rng: random.Random) -> dict[str, int]:
    """Split `total` over the strata in proportion to `sizes`, each share rounded at random.

    Each stratum gets its quota's floor, and the units left over go to strata picked with probability
    equal to their quota's fraction (one random start, evenly spaced points over the fractions laid
    end to end). So every mutant is chosen with the same probability total / population, and the
    sample's plain kill rate is an unbiased estimate; rounding to the largest remainders instead
    would always drop the same small files.
    """
    population = sum(sizes.values())
    if not 0 < total <= population:
        raise ValueError(f"a sample of {total} from {population} mutants")
    quotas = {name: total * size / population for name, size in sizes.items()}
    shares = {name: int(quota) for name, quota in quotas.items()}
    point, reached = rng.random(), 0.0
    for name in sorted(quotas):
        reached += quotas[name] - shares[name]
        if point < reached:
            shares[name] += 1
            point += 1
    # Float sums can leave the last point a hair past the end; the total is still exact.
    missing = total - sum(shares.values())
    for name in sorted(quotas, key=lambda name: shares[name] - quotas[name])[:missing]:
        shares[name] += 1
    return shares


def choose(strata: dict[str, list[str]], total: int, seed: int) -> list[str]:
    """`total` names drawn without replacement, each stratum's share from its own sorted list."""
    rng = random.Random(seed)
    shares = allocate({name: len(members) for name, members in strata.items()}, total, rng)
    chosen = []
    for name in sorted(strata):
        chosen += rng.sample(sorted(strata[name]), shares[name])
    return sorted(chosen)


def generate_mutants() -> dict[str, list[str]]:
    """Run mutmut's generation and return each mutated source file's mutant names."""
    from mutmut import __main__ as mutmut  # imported late: it sets up multiprocessing on import

    Path("mutants").mkdir(exist_ok=True)
    mutmut.copy_src_dir()
    mutmut.copy_also_copy_files()
    mutmut.setup_source_paths()
    mutmut.store_lines_covered_by_tests()
    mutmut.create_mutants(2)
    strata = {}
    for path in mutmut.walk_mutatable_files():
        data = mutmut.SourceFileMutationData(path=path)
        data.load()
        if data.exit_code_by_key:
            strata[str(path)] = list(data.exit_code_by_key)
    return strata


def narrowed(strata: dict[str, list[str]], globs: list[str]) -> dict[str, list[str]]:
    kept = {
        path: [name for name in names if any(fnmatch.fnmatch(name, glob) for glob in globs)]
        for path, names in strata.items()
    }
    return {path: names for path, names in kept.items() if names}


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return head.stdout.strip() or "unknown"


def main(argv: list[str]) -> int:
    if argv == ["--names"]:
        print("\n".join(json.loads(SAMPLE_FILE.read_text())["names"]))
        return 0
    total = int(argv[0])
    rest = argv[1:]
    seed = int(rest.pop(0)) if rest and rest[0].isdigit() else random.SystemRandom().randrange(10**6)
    strata = generate_mutants()
    if rest:
        strata = narrowed(strata, rest)
    names = choose(strata, total, seed)
    population = {path: len(members) for path, members in strata.items()}
    SAMPLE_FILE.write_text(
        json.dumps(
            {"seed": seed, "commit": commit(), "population": population, "names": names},
            indent=1,
        )
    )
    print(
        f"mutation sample: {len(names)} of {sum(population.values())} mutants, seed {seed} (MUTATE_SEED={seed})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
