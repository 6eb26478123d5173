"""`sync_crm`: send one contact to the CRM, with the CRM's token, from a worker function of its own."""

import json
import urllib.error
import urllib.request

from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs.base import JobContext, JobType, PermanentJobError, RetryableJobError, WorkerFunction


class SyncCrmPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    contact_id: str = Field(alias="contactId", min_length=1, max_length=128)


class CrmSettings(BaseModel):
    """CDK context `jobSettings.sync_crm`: checked by `cdk synth` and again when the worker starts."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    crm_url: str = Field(alias="crmUrl", pattern=r"^https?://")
    timeout_seconds: float = Field(alias="timeoutSeconds", default=10, gt=0, le=110)


RETRIED_STATUSES = frozenset({408, 425, 429})


def run(payload: SyncCrmPayload, context: JobContext) -> dict:
    settings: CrmSettings = context.type_settings
    # crmUrl is http(s) only (CrmSettings), never a payload value.
    request = urllib.request.Request(  # noqa: S310
        settings.crm_url,
        data=json.dumps({"contactId": payload.contact_id}).encode(),
        headers={
            "Authorization": f"Bearer {context.secret('crm_token')}",
            "Content-Type": "application/json",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_seconds) as response:  # noqa: S310
            return {"status": response.status, "answer": json.loads(response.read())}
    except urllib.error.HTTPError as error:
        if error.code in RETRIED_STATUSES or error.code >= 500:  # busy or broken for now: try again later
            raise RetryableJobError(f"the CRM answered {error.code}") from None
        # A 401 or 403 (a wrong token), a 404, a 422: the same request fails the same way every time.
        raise PermanentJobError(f"the CRM refused the contact: {error.code} {error.reason}") from None
    except OSError as error:  # the CRM is down or slow: try again later
        raise RetryableJobError(f"the CRM did not answer: {error}") from None


JOB_TYPE = JobType(
    name="sync_crm",
    payload_model=SyncCrmPayload,
    run=run,
    settings_model=CrmSettings,
    secrets=("crm_token",),
    # A slow CRM may take up to two minutes: a function of its own, not the shared worker's minute.
    function=WorkerFunction(timeout_seconds=120),
)
