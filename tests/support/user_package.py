"""A user's package of job types, written outside the repository as a user would write it.

`sync_crm` declares everything a type may declare: a settings model (`crmUrl`, CDK context
`jobSettings`), a secret (`crm_token`) and a function of its own (120 s). One attempt waits
`seconds` (a slow CRM), then POSTs the contact to `crmUrl` with the token as a bearer token, and
returns what the CRM answered.
"""

import textwrap
import uuid
from pathlib import Path

SYNC_CRM = textwrap.dedent(
    '''
    """`sync_crm`: one contact to the CRM."""

    import json
    import time
    import urllib.request

    from pydantic import BaseModel, ConfigDict, Field

    from lambdas.jobs.base import JobContext, JobType, WorkerFunction


    class SyncCrmPayload(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)

        contact_id: str = Field(alias="contactId", min_length=1)
        seconds: float = Field(default=0, ge=0, le=110)


    class CrmSettings(BaseModel):
        model_config = ConfigDict(extra="forbid", populate_by_name=True)

        crm_url: str = Field(alias="crmUrl", pattern=r"^https?://")


    def run(payload: SyncCrmPayload, context: JobContext) -> dict:
        time.sleep(payload.seconds)
        request = urllib.request.Request(
            context.type_settings.crm_url,
            data=json.dumps({"contactId": payload.contact_id}).encode(),
            headers={
                "Authorization": f"Bearer {context.secret('crm_token')}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return {"status": response.status, "answer": json.loads(response.read())}


    JOB_TYPE = JobType(
        name="sync_crm",
        payload_model=SyncCrmPayload,
        run=run,
        settings_model=CrmSettings,
        secrets=("crm_token",),
        function=WorkerFunction(timeout_seconds=120),
    )
    '''
)


def write_package(root: Path, modules: dict[str, str] | None = None, requirements: str = "") -> Path:
    """A package of job types under `root`, named uniquely (a process imports each name once): the
    `sync_crm` type, or the given modules (file name -> source)."""
    folder = root / f"crm_jobs_{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('"""A user\'s job types."""\n')
    for name, source in (modules or {"sync_crm": SYNC_CRM}).items():
        (folder / f"{name}.py").write_text(source)
    if requirements:
        (folder / "requirements.txt").write_text(requirements)
    return folder
