"""Where the console's browser tests find Chromium: Debian's `chromium` package, never a browser that
Playwright downloads (these machines reach package registries only).

`CHROMIUM` names an executable; otherwise Debian's binary, or `chromium` / `chromium-browser` on PATH.
`python -m tests.support.browser --install` (`make browser`, which `make test` runs first) installs
Debian's package with apt-get when none is found and it runs as root; otherwise it exits non-zero
saying what is missing and how to provide it.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Debian's real binary; /usr/bin/chromium is a shell wrapper around it that adds desktop flags.
DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")
APT_PACKAGE = "chromium"

MISSING = (
    "The console's browser tests need Chromium, and none was found: set CHROMIUM=/path/to/chromium, "
    f"or install Debian's package (as root: apt-get install -y {APT_PACKAGE}; `make browser` does it when "
    "run as root)."
)


def find_chromium() -> str | None:
    named = os.environ.get("CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    if os.access(DEBIAN_BINARY, os.X_OK):
        return str(DEBIAN_BINARY)
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _apt_get(*args: str) -> bool:
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "-q", "-y", *args]
    return subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, check=False).returncode == 0


def install() -> str | None:
    """Installs Debian's chromium if this process may (root, apt-get present); the executable, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None
    print(f"==> installing Debian's {APT_PACKAGE} for the console's browser tests (apt-get, a minute or two)")
    # A fresh machine may have no package lists yet: fetch them only when the install needs them.
    if not _apt_get("install", APT_PACKAGE):
        _apt_get("update")
        _apt_get("install", APT_PACKAGE)
    return find_chromium()


def main(argv: list[str]) -> int:
    found = find_chromium() or (install() if "--install" in argv else None)
    if found is None:
        print(MISSING, file=sys.stderr)
        return 1
    print(f"==> browser tests use {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
