"""Packages the function code without Docker: pip fetches Lambda-platform wheels, then `lambdas/` is copied.

All functions run from this one asset. Its hash covers only what ends up in it (requirements.txt,
the `lambdas/` package, the user's packages of job types and their requirements, the pip target and
whether byte code is shipped), so editing tests or infra does not rebuild or redeploy it.

A user's package of job types (infra/job_types.py) is copied beside `lambdas/` under its import name,
and its requirements are installed by the same pip call, for the same platform, as offload's own.

Byte code: Lambda's code directory is read-only, so a bundle without `__pycache__` is compiled anew on
every cold start (docs/decisions/bytecode-for-python314.md). Byte code is only valid for the Python
version that wrote it, so the bundle is compiled by an interpreter of the runtime's version: the build
interpreter or `python3.14` on PATH when at hand, else pyodide's CPython 3.14 (WebAssembly, pinned in
package.json) under node, with `compile_pyc.js`; a .pyc depends on the minor version only, not on the
platform. The byte code is hash-based and never checked against its source: the asset never changes
under it, so checking would only cost a read of every source file at each import.
"""

import hashlib
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from infra.job_types import JobPackage

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGE: Final = "lambdas"
REQUIREMENTS: Final = "requirements.txt"
LAMBDA_PYTHON_VERSION: Final = "3.14"
# Lambda's python3.14 runtime (Amazon Linux 2023, glibc 2.34) takes wheels of either manylinux generation;
# some packages (Pillow) publish aarch64 wheels only for the newer one.
PIP_PLATFORMS: Final = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
_IGNORED: Final = ("__pycache__", "*.pyc")


def matching_interpreter(version: str = LAMBDA_PYTHON_VERSION) -> str | None:
    """A Python of the runtime's version to compile the bundle with, if this machine has one."""
    if platform.python_version().rsplit(".", 1)[0] == version:
        return sys.executable
    return shutil.which(f"python{version}")


def compile_bytecode(directory: str | Path, interpreter: str | None) -> None:
    """Write byte code for every module under `directory`, as the runtime's version reads it.

    With `interpreter` (a native Python of that version), or with pyodide under node when it is None.
    """
    if interpreter is None:
        command = ["node", str(REPO_ROOT / "infra" / "compile_pyc.js"), LAMBDA_PYTHON_VERSION]
    else:
        command = [interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    result = subprocess.run([*command, str(directory)], capture_output=True, text=True, check=False)  # noqa: S603
    if result.returncode != 0:
        raise RuntimeError(f"could not compile the Lambda bundle:\n{result.stdout}{result.stderr}")


def copy_package(output_dir: str | Path, packages: Sequence[JobPackage] = ()) -> None:
    shutil.copytree(REPO_ROOT / PACKAGE, Path(output_dir) / PACKAGE, ignore=shutil.ignore_patterns(*_IGNORED))
    for package in packages:
        shutil.copytree(
            package.source, Path(output_dir) / package.name, ignore=shutil.ignore_patterns(*_IGNORED)
        )


def pip_command(output_dir: str, packages: Sequence[JobPackage] = ()) -> list[str]:
    platforms = [arg for platform in PIP_PLATFORMS for arg in ("--platform", platform)]
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        *platforms,
        "--only-binary=:all:",
        "--python-version",
        LAMBDA_PYTHON_VERSION,
        "--implementation",
        "cp",
        # Compiled afterwards, with the runtime's version, together with `lambdas/`.
        "--no-compile",
        "-r",
        str(REPO_ROOT / REQUIREMENTS),
        # One resolution for offload's requirements and the packages': pip refuses a conflict.
        *(requirement for package in packages for requirement in package.requirements),
        "-t",
        output_dir,
    ]


@jsii.implements(ILocalBundling)
class PipBundling:
    """Bundles on the host; raises instead of declining, since the Docker fallback is not an option here."""

    def __init__(self, packages: Sequence[JobPackage] = ()) -> None:
        self._packages = tuple(packages)

    def try_bundle(self, output_dir: str, *_options: Any, **_kwargs: Any) -> bool:
        command = pip_command(output_dir, self._packages)
        result = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        if result.returncode != 0:
            raise RuntimeError(f"pip could not bundle the Lambda dependencies:\n{result.stderr}")
        copy_package(output_dir, self._packages)
        compile_bytecode(output_dir, matching_interpreter())
        return True


def _files(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def source_hash(packages: Sequence[JobPackage] = ()) -> str:
    """Hash of the asset's inputs: the requirements, every file of the packages and the pip target."""
    digest = hashlib.sha256()
    # Either compiler's byte code is valid; the files differ (paths in the code objects), so does the hash.
    compiled = "bytecode" if matching_interpreter() else "bytecode-pyodide"
    digest.update(" ".join((*PIP_PLATFORMS, LAMBDA_PYTHON_VERSION, compiled)).encode())
    files = [(REPO_ROOT / REQUIREMENTS, REQUIREMENTS)]
    files += [(path, path.relative_to(REPO_ROOT).as_posix()) for path in _files(REPO_ROOT / PACKAGE)]
    for package in packages:
        digest.update(" ".join((package.name, *package.requirements)).encode() + b"\0")
        files += [
            (path, f"{package.name}/{path.relative_to(package.source).as_posix()}")
            for path in _files(package.source)
        ]
    for path, name in files:
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def function_code(packages: Sequence[JobPackage] = ()) -> lambda_.Code:
    return lambda_.Code.from_asset(
        str(REPO_ROOT),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=source_hash(packages),
        bundling=BundlingOptions(
            # Never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry("none"),
            local=PipBundling(packages),
        ),
    )
