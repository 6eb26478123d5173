"""`make mutate`'s summary: the kill rate of the mutants run, and each survivor with its diff.

Usage: python -m tests.support.mutation_report [MUTANT_GLOB ...] (the globs `mutmut run` was given;
none means every mutant). Killed counts mutants the tests failed on, timed out on, or the type checker
refused; a mutant no test reaches counts as surviving, since nothing would notice it.
"""

import fnmatch
import subprocess
import sys
from collections import Counter
from pathlib import Path

MUTMUT = str(Path(sys.executable).with_name("mutmut"))
KILLED = {"killed", "timeout", "caught by type check"}
NOT_RUN = {"not checked", "skipped", "check was interrupted by user"}


def statuses(globs: list[str]) -> dict[str, str]:
    listing = subprocess.run(
        [MUTMUT, "results", "--all", "true"], capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in listing.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if name and (not globs or any(fnmatch.fnmatch(name, g) for g in globs)):
            found[name] = status
    return found


def main(globs: list[str]) -> int:
    found = statuses(globs)
    judged = {name: status for name, status in found.items() if status not in NOT_RUN}
    if not judged:
        print("no mutants have been run; run `make mutate` first")
        return 1
    counts = Counter(judged.values())
    killed = sum(n for status, n in counts.items() if status in KILLED)
    print(f"mutants: {len(judged)} run, {killed} killed: {100 * killed / len(judged):.1f} % kill rate")
    print("by status: " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    survivors = sorted(name for name, status in judged.items() if status not in KILLED)
    for name in survivors:
        print(f"\n--- {name}: {judged[name]}")
        shown = subprocess.run([MUTMUT, "show", name], capture_output=True, text=True, check=False)
        print(shown.stdout.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
