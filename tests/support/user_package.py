"""A user's package of job types, written outside the repository as a user would write it: a copy of
examples/user-project/crm_jobs, the template project's own package.

Its `sync_crm` declares everything a type may declare: a settings model (`crmUrl`, `timeoutSeconds`:
CDK context `jobSettings`), a secret (`crm_token`) and a function of its own (120 s).
"""

import shutil
import uuid
from pathlib import Path

from infra.bundling import REPO_ROOT

EXAMPLE_PROJECT = REPO_ROOT / "examples" / "user-project"
SYNC_CRM = (EXAMPLE_PROJECT / "crm_jobs" / "sync_crm.py").read_text()


def write_package(root: Path, modules: dict[str, str] | None = None, requirements: str = "") -> Path:
    """A package of job types under `root`, named uniquely (a process imports each name once): the
    example's, or one of the given modules (file name -> source)."""
    folder = root / f"crm_jobs_{uuid.uuid4().hex[:8]}"
    if modules is None:
        shutil.copytree(EXAMPLE_PROJECT / "crm_jobs", folder, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text('"""A user\'s job types."""\n')
        for name, source in modules.items():
            (folder / f"{name}.py").write_text(source)
    if requirements:
        (folder / "requirements.txt").write_text(requirements)
    return folder


_TYPE_MODULE = """
from pydantic import BaseModel

from lambdas.jobs.base import Capability, JobType, WorkerFunction


class Payload(BaseModel):
    pass


JOB_TYPE = JobType(
    name={name!r},
    payload_model=Payload,
    run=lambda payload, context: None,
    function=WorkerFunction(timeout_seconds={timeout}),
    uses=frozenset({uses}),
    secrets={secrets!r},
)
"""


def type_module(name: str, timeout: int, uses: str = "", secrets: tuple[str, ...] = ()) -> str:
    """A type's module that does nothing, in a worker function of its own (`timeout` seconds), using
    `uses` (Capability members, as source) and declaring `secrets`."""
    return _TYPE_MODULE.format(
        name=name, timeout=timeout, uses=f"{{{uses}}}" if uses else "", secrets=secrets
    )
