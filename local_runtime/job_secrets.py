"""The job types' secrets in the local runtime: values from `.local/secrets.json`, a git-ignored file in
the project's folder (a user's project when the runtime starts in one, local_runtime/runtime.py).

The template's secrets that a job type declared carry their name as a tag (infra/job_secrets.py).
Provisioning creates each with a random value, as Secrets Manager would; this then puts the file's
value for that name (`{"crm_token": "..."}`) over it, or says how to give it one, so a job never runs
with a value nobody chose without the console saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from local_runtime.template import model as prov_model
from local_runtime.template.model import Provisioned

SECRETS_PATH = Path(".local") / "secrets.json"  # under the project's folder
NAME_TAG = "offload:job-secret"  # infra/job_secrets.py's, read here from the template alone


def declared_secrets(template: Mapping[str, Any]) -> dict[str, str]:
    """Logical id -> declared name of every job secret the template creates."""
    found = {}
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") != prov_model.SECRET:
            continue
        for tag in resource.get("Properties", {}).get("Tags", []):
            if tag.get("Key") == NAME_TAG:
                found[logical_id] = str(tag["Value"])
    return found


def fill_secrets(
    template: Mapping[str, Any],
    provisioned: Provisioned,
    client: Callable[[str], Any],
    say: Callable[[str], None],
    path: Path,
) -> dict[str, bool]:
    """Put each declared secret's value from `path`; name -> whether the file gave it one."""
    declared = declared_secrets(template)
    if not declared:
        return {}
    values = _values(path, say)
    given = {}
    for logical_id, name in sorted(declared.items(), key=lambda item: item[1]):
        value = values.get(name)
        given[name] = isinstance(value, str) and bool(value)
        if given[name]:
            client("secretsmanager").put_secret_value(
                SecretId=provisioned.resources[logical_id].ref, SecretString=value
            )
        else:
            say(
                f"note: job secret {name!r} has a random value: set it in {path} "
                f'({{"{name}": "..."}}) and start again'
            )
    return given


def _values(path: Path, say: Callable[[str], None]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        values = json.loads(path.read_text())
    except ValueError as error:
        say(f"note: {path} is not JSON ({error}); no job secret was set from it")
        return {}
    if not isinstance(values, dict):
        say(f"note: {path} is not a JSON object of secret names and values")
        return {}
    return values
