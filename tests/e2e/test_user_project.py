"""A user's project as a newcomer builds it: examples/user-project's README commands, run verbatim in a
fresh virtualenv beside a copy of offload's checkout (`../offload`), with nothing of this one's venv.

What it holds: `pip install -e ../offload ...` installs what offload runs with (its functions' and its
tools' pins); the project's own tests pass; the local runtime started in the project reads the
project's `.local/secrets.json`; the example's job is done with that token and dies at once, not
retried, on a 401; a helper module without `JOB_TYPE` stops the start with a message that says how to
name it. The install takes a minute or two from the machine's package index.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from infra.bundling import REPO_ROOT
from tests.support.user_package import EXAMPLE_PROJECT

pytestmark = pytest.mark.slow

TOKEN = "token-from-the-projects-secrets-file"
GOOD, REFUSED = "c-ok", "c-refused"
STARTED = re.compile(r"API URL\s+(\S+)")
CLIENT_KEY = re.compile(r"API keys\s+default\s+(\S+)")


def _readme_command(program: str) -> list[str]:
    """The README's command that starts with `program`, its comment left out."""
    commands = (
        line for line in (EXAMPLE_PROJECT / "README.md").read_text().splitlines() if line[:4] == "    "
    )
    for line in commands:
        words = shlex.split(line, comments=True)
        if words[: len(program.split())] == program.split():
            return words
    raise AssertionError(f"examples/user-project/README.md has no `{program}` command")


def _environment() -> dict[str, str]:
    """The shell of a user who has just cloned: no PYTHONPATH into this checkout, no venv of ours."""
    return {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("newcomer")
    tracked = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        source = REPO_ROOT / name
        if source.is_file() and not source.is_symlink():  # .venv and node_modules are links to a shared copy
            (root / "offload" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / "offload" / name)
    project = root / "my-jobs"
    shutil.copytree(EXAMPLE_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=project, check=True)
    pip = _readme_command("pip install")
    installed = subprocess.run(
        [str(project / ".venv" / "bin" / "pip"), *pip[1:]],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    (project / ".local").mkdir()
    (project / ".local" / "secrets.json").write_text(json.dumps({"crm_token": TOKEN}))
    return project


class _Crm(BaseHTTPRequestHandler):
    """Takes contact c-ok, refuses any other with 401 (a wrong token, as the CRM sees it)."""

    seen: list[tuple[str, str]] = []

    def do_POST(self) -> None:
        contact = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["contactId"]
        type(self).seen.append((contact, self.headers["Authorization"]))
        status = 200 if contact == GOOD else 401
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"synced": true}' if status == 200 else b'{"error": "unauthorized"}')

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def crm() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Crm)
    _Crm.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/contacts"
    server.shutdown()


def _start(project: Path, *context: str) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    """`python -m local_runtime` as the README runs it, on a free port; its output lines as they come."""
    command = [str(project / ".venv" / "bin" / "python"), *_readme_command("python -m local_runtime")[1:]]
    args = ["--port", "0", "--no-reload", *(f"-c{pair}" for pair in context)]
    process = subprocess.Popen(
        [*command, *args],
        cwd=project,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    return process, lines, reader


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_for(lines: list[str], pattern: re.Pattern[str], process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for line in list(lines):
            found = pattern.search(line)
            if found:
                return found.group(1)
        assert process.poll() is None, "".join(lines)
        time.sleep(0.5)
    raise AssertionError("".join(lines))


# What a project runs of offload: its synth, its local runtime, its CLI, the functions' handlers.
ENTRY_MODULES = (
    "infra.synth",
    "local_runtime.runtime",
    "offload_cli.main",
    "lambdas.handlers.api",
    "lambdas.handlers.worker",
    "lambdas.handlers.dead_letter",
)


def test_the_install_gives_offload_what_it_imports_and_the_projects_tests_pass(project: Path) -> None:
    """Seen to fail with offload's pyproject.toml declaring no dependencies (ModuleNotFoundError:
    aws_lambda_powertools, as the README's install left it; the project's own tests pass either way)."""
    python = str(project / ".venv" / "bin" / "python")
    imports = "; ".join(f"import {module}" for module in ENTRY_MODULES)
    imported = subprocess.run(
        [python, "-c", imports], cwd=project, env=_environment(), capture_output=True, text=True, timeout=300
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert _readme_command("pytest") == ["pytest"]
    ran = subprocess.run(
        [str(project / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]


def test_the_local_runtime_runs_the_projects_type_with_its_secret_and_never_retries_a_401(
    project: Path, crm: str
) -> None:
    """Seen to fail with the runtime reading offload's checkout's `.local/secrets.json` (the CRM got a
    random token and the start said `job secret 'crm_token' has a random value`), and with the
    example's `except urllib.error.HTTPError` removed (the refused job was retried)."""
    settings = json.dumps({"sync_crm": {"crmUrl": crm}})
    process, lines, _ = _start(project, f"jobSettings={settings}")
    try:
        url = _wait_for(lines, STARTED, process).rstrip("/")
        headers = {"x-api-key": _wait_for(lines, CLIENT_KEY, process)}
        # the CLI installed in the fresh venv finds the runtime by itself
        offload = project / ".venv" / "bin" / "offload"
        submitted = subprocess.run(
            [str(offload), "submit", "sync_crm", "--payload", json.dumps({"contactId": GOOD}), "--wait"],
            cwd=project,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        refused = requests.post(
            f"{url}/jobs",
            json={"type": "sync_crm", "payload": {"contactId": REFUSED}},
            headers=headers,
            timeout=30,
        ).json()["jobId"]
        job: dict[str, Any] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and job.get("status") not in ("done", "dead"):
            time.sleep(1)
            job = requests.get(f"{url}/jobs/{refused}", headers=headers, timeout=30).json()
    finally:
        _stop(process)
    output = "".join(lines)
    assert "random value" not in output, output
    assert (GOOD, f"Bearer {TOKEN}") in _Crm.seen
    assert (job["status"], job["attempts"]) == ("dead", 1), job
    assert "401" in job["lastError"]
    assert [contact for contact, _ in _Crm.seen].count(REFUSED) == 1


def test_a_helper_module_without_a_type_stops_the_start_saying_how_to_name_it(project: Path) -> None:
    """Seen to fail with infra/job_types.py's message without its hint (no `_helpers.py` in it)."""
    helper = project / "crm_jobs" / "helpers.py"
    helper.write_text("TIMEOUT = 10\n")
    try:
        process, lines, reader = _start(project)
        assert process.wait(timeout=240) == 1
    finally:
        helper.unlink()
    reader.join(timeout=30)  # the output's last lines
    output = "".join(lines)
    assert "the local runtime could not start" in output, output
    assert "name a helper module _helpers.py and it is skipped" in output, output
