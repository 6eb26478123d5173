"""What the runtime shows: one line per job transition (and alerts), everything else kept for `--verbose`.

Every line a function writes is kept (bounded) with a sequence number so `offload tail` and the tests
can read what happened after a given point.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from local_runtime.gateway import ApiKey
from local_runtime.sigv4 import IamSigner
from offload_cli.render import TRANSITION, render_transition


def offload_command() -> str:
    """How to run the `offload` installed next to this Python, as a user can paste it from here."""
    script = Path(sys.executable).parent / "offload"
    if not script.exists():
        return f"{sys.executable} -m offload_cli"
    relative = os.path.relpath(script)
    return relative if not relative.startswith("..") else str(script)


def key_lines(keys: Sequence[ApiKey]) -> list[str]:
    """One line per key: its name, value and role; the first is the one the commands below use."""
    width = max(len(key.name) for key in keys)
    lines = []
    for index, key in enumerate(keys):
        label = "API keys" if index == 0 else ""
        note = f"{key.role}, API_KEY below" if index == 0 else key.role
        lines.append(f"  {label:<9} {key.name:<{width}}  {key.value}  ({note})")
    return lines


def startup_banner(url: str, keys: Sequence[ApiKey], aws_url: str, elapsed: float) -> str:
    """What `make run` prints once it is up: every command in it works as printed (bash or zsh)."""
    api_url = url.rstrip("/")
    api_key = keys[0].value
    payload = {"to": ["ada@example.com"], "subject": "Hello", "text": "From offload"}
    job = json.dumps({"type": "send_email", "payload": payload})
    offload = offload_command()
    return "\n".join(
        [
            f"offload is running locally (started in {elapsed:.1f} s)",
            f"  API URL   {api_url}",
            f"  Console   {api_url}/console  (sign in with an API key below)",
            *key_lines(keys),
            f"  AWS       {aws_url}  (moto: state is in memory and goes when the runtime stops)",
            "",
            "Submit a job with curl (${API_URL%/} is right whether or not the URL ends in /):",
            f"  export API_URL={api_url} API_KEY={api_key}",
            '  curl -s -X POST "${API_URL%/}/jobs" -H "x-api-key: $API_KEY" -H \'content-type: application/json\' '
            f"-d '{job}'",
            '  curl -s "${API_URL%/}/jobs/JOB_ID" -H "x-api-key: $API_KEY"',
            "Or with the CLI, which finds this runtime by itself:",
            f"  {offload} submit send_email --payload '{json.dumps(payload)}' --wait",
            f"  {offload} tail                  # every job transition",
            f"  {offload} webhook-secret        # this key's whsec_... secret: its receivers verify with it",
            "",
            "Job transitions appear below. Ctrl-C stops everything.",
        ]
    )


def iam_banner(url: str, signers: Sequence[IamSigner], region: str, aws_url: str, elapsed: float) -> str:
    """What `make run -c auth=iam` prints: each mapped role's credentials, as the shell exports them."""
    api_url = url.rstrip("/")
    lines = [
        f"offload is running locally with IAM callers (started in {elapsed:.1f} s)",
        f"  API URL   {api_url}",
        f"  AWS       {aws_url}  (moto: state is in memory and goes when the runtime stops)",
        "",
        "Every route checks SigV4 signatures (service execute-api, region "
        f"{region}); each mapped role has credentials of its own (also in .local/runtime.json):",
    ]
    for signer in signers:
        lines += [
            f"  {signer.name} ({signer.role}, {signer.credentials.role_arn}):",
            f"    export AWS_ACCESS_KEY_ID={signer.credentials.access_key_id} "
            f"AWS_SECRET_ACCESS_KEY={signer.credentials.secret_access_key} "
            f"AWS_SESSION_TOKEN={signer.credentials.session_token} AWS_REGION={region}",
        ]
    lines += [
        "Then sign with offload_client (pip install './client[aws]'):",
        f"  python -c 'from offload_client import Client; from offload_client.aws import SigV4Auth; "
        f'print(Client("{api_url}", auth=SigV4Auth()).stats())\'',
        "",
        "Job transitions appear below. Ctrl-C stops everything.",
    ]
    return "\n".join(lines)


class Console:
    def __init__(self, verbose: bool = False, quiet: bool = False, out: TextIO | None = None) -> None:
        self.verbose = verbose
        self.quiet = quiet
        self._out = out or sys.stdout
        self._lock = threading.Lock()
        self._entries: deque[dict[str, Any]] = deque(maxlen=20_000)
        self._sequence = 0

    def say(self, text: str) -> None:
        if self.quiet:
            return
        with self._lock:
            print(text, file=self._out, flush=True)

    def function_line(self, function: str, line: str) -> None:
        """A line a function wrote to stdout or stderr (Powertools logs are JSON lines)."""
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            record = {"message": line}
        entry = {**record, "function": function, "time": time.time()}
        with self._lock:
            self._sequence += 1
            entry["seq"] = self._sequence
            self._entries.append(entry)
        if entry.get("event") == TRANSITION:
            self.say(render_transition(entry))
        elif self.verbose:
            self.say(f"[{function}] {line}")

    def entries(self, after: int = 0, event: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                e for e in self._entries if e["seq"] > after and (event is None or e.get("event") == event)
            ]
