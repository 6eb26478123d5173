"""The Lambda asset's code imports, and its pure-logic tests pass, under CPython 3.14 (see __init__.py)."""

import subprocess
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / "tests" / "py314" / "run_pyodide.js"
WHEELS = REPO / ".venv" / "pyodide-wheels"
PURE_TESTS = (
    "tests/unit/test_backoff.py",
    "tests/unit/jobs/test_ssrf.py",
    "tests/unit/jobs/test_webhook_signing.py",
    "tests/unit/jobs/test_webhook_responses.py",
    "tests/unit/jobs/test_upload_keys.py",
    "tests/unit/jobs/test_registry.py",
    "tests/unit/jobs/test_send_email_payload.py",
    "tests/unit/test_store_expressions.py",
    "tests/unit/test_store_item_size.py",
    "tests/unit/test_store_transactions.py",
    "tests/unit/test_settings.py",
    "tests/unit/test_messages.py",
    "tests/unit/test_queue_batches.py",
)
# pyodide cannot start a thread or a process: these run on 3.11 only.
NO_THREADS_OR_PROCESSES = (
    "tests/unit/jobs/test_ssrf.py::test_refused_at_submission_with_422",
    "tests/unit/jobs/test_ssrf.py::test_loopback_switch_admits_loopback",
    "tests/unit/jobs/test_ssrf.py::test_unknown_host_is_refused_at_submission_but_a_flaky_resolver_is_not",
    "tests/unit/jobs/test_ssrf.py::test_submission_dns_checks_end_at_one_deadline_for_all_hosts",
    "tests/unit/jobs/test_ssrf.py::test_answers_that_came_in_time_still_refuse",
    "tests/unit/test_settings.py::test_importing_the_handlers_reads_no_environment",
)


@pytest.fixture(scope="module")
def wheel_dir() -> Path:
    if not list(WHEELS.glob("pydantic_core-*.whl")):
        pytest.fail(
            f"no pydantic-core wheel for pyodide in {WHEELS}: `make test` fetches it once "
            f"(python -m tests.py314.wheels {WHEELS.relative_to(REPO)})"
        )
    return WHEELS


def run(repo: Path, package: str, wheel_dir: Path, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    site = sysconfig.get_paths()["purelib"]
    command = ["node", str(RUNNER), str(repo), site, str(wheel_dir), package, *pytest_args]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=REPO)


def test_every_module_of_the_asset_imports_and_the_pure_tests_pass_on_cpython_314(wheel_dir: Path) -> None:
    """Seen failing with `from ast import Num` (removed in 3.14) added to lambdas/config.py: "FAILED to
    import lambdas.config on 3.14.2 ... ImportError: cannot import name 'Num' from 'ast'"."""
    deselected = [option for test in NO_THREADS_OR_PROCESSES for option in ("--deselect", test)]

    done = run(REPO, "lambdas", wheel_dir, *PURE_TESTS, *deselected)

    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    modules = len(list((REPO / "lambdas").rglob("*.py")))
    assert f"CPython 3.14.2 (emscripten): {modules} modules of lambdas/ imported" in done.stdout
    assert " passed" in done.stdout.splitlines()[-1]
    assert "failed" not in done.stdout.splitlines()[-1]


def test_a_module_using_a_name_314_removed_fails_the_run(wheel_dir: Path, tmp_path: Path) -> None:
    """The check itself: a module that imports on 3.11 but not on 3.14 is reported with its error."""
    package = tmp_path / "probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fine.py").write_text("import json\n")
    (package / "old_ast.py").write_text("from ast import Num  # deprecated since 3.8, removed in 3.14\n")

    done = run(tmp_path, "probe", wheel_dir)

    assert done.returncode == 1
    assert "2 modules of probe/ imported" in done.stdout
    assert "FAILED to import probe.old_ast on 3.14.2" in done.stdout
    assert "cannot import name 'Num' from 'ast'" in done.stdout
