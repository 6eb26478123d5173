"""README's API commands, run verbatim with curl against the local runtime: a new user's first contact."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import requests

from tests.e2e.conftest import Client

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_api_commands() -> list[str]:
    """The commands of the first bash block in README's "The API" section, continuation lines joined."""
    section = README.read_text().split("## The API", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    joined = block.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.startswith("curl ")]


def run(command: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["bash", "-c", command],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("trailing_slash", [True, False])
def test_the_readme_commands_work_as_pasted_and_location_can_be_followed(
    client: Client, trailing_slash: bool
) -> None:
    submit, read = readme_api_commands()
    printed = client.runtime.url  # what `make run` prints: it ends in "/"
    env = {"API_URL": printed if trailing_slash else printed.rstrip("/"), "API_KEY": client.runtime.api_key}

    submitted = run(submit.replace("welcome-42", f"welcome-{trailing_slash}"), env)

    assert re.match(r"HTTP/1\.[01] 202", submitted), submitted
    location = re.search(r"^Location: (\S+)", submitted, re.MULTILINE | re.IGNORECASE)
    assert location, submitted
    job_id = json.loads(submitted.split("\n\n", 1)[1])["jobId"]
    assert location.group(1) == f"{printed}jobs/{job_id}"
    followed = requests.get(location.group(1), headers=client.headers, timeout=10)
    assert followed.status_code == 200
    assert followed.json()["jobId"] == job_id
    assert '"jobId"' in run(read, {**env, "JOB_ID": job_id})
