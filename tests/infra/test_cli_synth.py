"""The real CLI (`npx cdk synth`), as `make synth` and `make deploy` run it: bundles the shared code asset
with pip for arm64, offline from AWS and without Docker."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.bundling import REPO_ROOT
from lambdas import config

# Bundling downloads the arm64 wheels from PyPI (pip caches them), hence the generous timeout.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("infra-cli"), pytest.mark.timeout(600)]

EM_AARCH64 = 183  # ELF e_machine of 64-bit ARM
# CPython 3.14's importlib.util.MAGIC_NUMBER (3627), as pyodide's 3.14.2 reports it; fixed for the whole
# minor series from its first release candidate, so Lambda's python3.14 expects the same.
MAGIC_3_14 = (3627).to_bytes(2, "little") + b"\r\n"
UNCHECKED_HASH = 0b01  # the .pyc flags word: hash-based, source never checked


def _cli_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "CDK_CONTEXT_JSON"}
    env.update(
        {
            # The venv's python3 is the app's interpreter (cdk.json: "python3 app.py"), as in `make synth`.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            # No credentials, and no probing the instance metadata service for them: synth needs neither.
            "AWS_EC2_METADATA_DISABLED": "true",
            "CDK_DISABLE_VERSION_CHECK": "1",
            "AWS_CDK_DISABLE_NOTICES": "1",
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        }
    )
    return env


def _synth(outdir: Path, project: Path = REPO_ROOT) -> None:
    """`npx cdk synth` run from `project`'s folder, as its owner runs it."""
    assert (REPO_ROOT / "node_modules" / ".bin" / "cdk").exists(), "the pinned CDK CLI is missing: npm ci"
    result = subprocess.run(
        ["npx", "--no-install", "cdk", "synth", "--quiet", "-o", str(outdir)],
        cwd=project,
        env=_cli_environment(),
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def _code_asset(assembly: Path) -> tuple[str, Path]:
    manifest: dict[str, Any] = json.loads((assembly / f"{config.STACK_ID}.assets.json").read_text())
    zipped = {h: a for h, a in manifest["files"].items() if a["source"]["packaging"] == "zip"}
    assert len(zipped) == 1, f"the four functions share one code asset, found {sorted(zipped)}"
    ((asset_hash, asset),) = zipped.items()
    return asset_hash, assembly / asset["source"]["path"]


def _elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path.name} is not an ELF object"
    return int.from_bytes(header[18:20], "little")


def _assert_compiled_for_3_14(package: Path) -> None:
    sources = list(package.rglob("*.py"))
    assert sources, f"no modules under {package}"
    for source in sources:
        cached = source.parent / "__pycache__" / f"{source.stem}.cpython-314.pyc"
        assert cached.is_file(), f"no python3.14 byte code for {source.relative_to(package.parent)}"
        header = cached.read_bytes()[:8]
        assert header[:4] == MAGIC_3_14, f"{cached.name} was written by another Python: {header[:4]!r}"
        assert int.from_bytes(header[4:8], "little") == UNCHECKED_HASH


def test_cli_synth_bundles_one_arm64_asset_for_all_functions(tmp_path: Path) -> None:
    # One test on purpose: the synth takes most of a minute, so everything is checked on one assembly.
    _synth(tmp_path)
    asset_hash, asset = _code_asset(tmp_path)

    template = json.loads((tmp_path / f"{config.STACK_ID}.template.json").read_text())
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 6  # the shared worker, process_file's and the schedules function
    assert {f["Properties"]["Code"]["S3Key"] for f in functions} == {f"{asset_hash}.zip"}

    # The handlers, and nothing of the repository that is not function code.
    for entry_point in ("api", "worker", "dead_letter", "recovery", "schedules"):
        assert (asset / "lambdas" / "handlers" / f"{entry_point}.py").is_file()
    assert not (asset / "tests").exists()
    assert not (asset / "infra").exists()

    # The runtime dependencies, native ones built for arm64 and CPython 3.14.
    assert (asset / "aws_lambda_powertools" / "__init__.py").is_file()
    assert (asset / "pydantic" / "__init__.py").is_file()
    (core,) = (asset / "pydantic_core").glob("_pydantic_core*.so")
    assert "cpython-314" in core.name
    assert "aarch64" in core.name
    assert _elf_machine(core) == EM_AARCH64
    pillow = list((asset / "PIL").glob("_imaging*.so"))
    assert pillow
    assert all(_elf_machine(library) == EM_AARCH64 for library in pillow)

    # Byte code for python3.14 ships, for our package and its dependencies: without it every cold start
    # compiles them (docs/performance.md); this machine has no python3.14, so pyodide wrote it.
    for package in ("lambdas", "aws_lambda_powertools", "pydantic", "botocore"):
        _assert_compiled_for_3_14(asset / package)


def test_a_users_project_synthesizes_with_its_package_in_the_asset(tmp_path: Path) -> None:
    """examples/user-project's `npx cdk synth`, run from its folder as its owner runs it: its cdk.json's
    jobPackages reach the stack, and its package is in the functions' one asset beside `lambdas/`.
    Seen to fail with `copy_package` leaving the user's packages out."""
    project = REPO_ROOT / "examples" / "user-project"
    _synth(tmp_path, project)
    _, asset = _code_asset(tmp_path)
    assert (asset / "crm_jobs" / "sync_crm.py").read_bytes() == (
        project / "crm_jobs" / "sync_crm.py"
    ).read_bytes()
    assert (asset / "lambdas" / "handlers" / "worker.py").is_file()
    template = json.loads((tmp_path / f"{config.STACK_ID}.template.json").read_text())
    timeouts = sorted(
        r["Properties"]["Timeout"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    )
    assert 120 in timeouts  # sync_crm's worker
