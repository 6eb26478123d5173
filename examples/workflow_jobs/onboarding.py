"""`onboarding`: welcome a new user, wait, and follow up only if they have not converted meanwhile.

A workflow (docs/job-types.md, "Workflows"): each email is a step, sent once however often the workflow
is replayed; the pause and the wait for the app's `converted` event cost no compute.
"""

from pydantic import BaseModel, ConfigDict, Field

from lambdas.jobs.base import Flow, JobContext, JobType, RetryableJobError


class OnboardingPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    email: str = Field(min_length=3, max_length=254, pattern=r"^[^@\s]+@[^@\s]+$")
    # Three days in production; a test passes seconds.
    pause_seconds: int = Field(alias="pauseSeconds", default=3 * 24 * 3600, ge=1, le=30 * 24 * 3600)
    convert_within_seconds: int = Field(
        alias="convertWithinSeconds", default=4 * 24 * 3600, ge=1, le=30 * 24 * 3600
    )


def send(context: JobContext, to: str, subject: str, text: str) -> str:
    try:
        return context.send_email(
            {
                "Destination": {"ToAddresses": [to]},
                "Content": {"Simple": {"Subject": {"Data": subject}, "Body": {"Text": {"Data": text}}}},
            }
        )
    except ConnectionError as error:  # an email outage: the step is retried with backoff
        raise RetryableJobError(f"email not sent: {error}") from None


def run(payload: OnboardingPayload, flow: Flow) -> dict:
    welcome = flow.step("welcome", send, flow.context, payload.email, "Welcome!", "Glad you're here.")
    flow.sleep("pause", payload.pause_seconds)
    converted = flow.wait_for_event("converted", payload.convert_within_seconds)
    if converted is not None:
        return {"welcome": welcome, "converted": converted}
    follow_up = flow.step(
        "follow_up", send, flow.context, payload.email, "Need a hand?", "Reply and we'll help."
    )
    return {"welcome": welcome, "followUp": follow_up}


JOB_TYPE = JobType(name="onboarding", payload_model=OnboardingPayload, run=run, workflow=True)
