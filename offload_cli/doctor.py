"""`offload doctor`: after a deploy, whether the stack works, as a pipeline's smoke test asks it.

It submits one email to SES's mailbox simulator (`success@simulator.amazonses.com`: accepted and
dropped, even while the account is in SES's sandbox) and waits for the job to be `done`; then it lists
the stack's CloudWatch alarms (named `<stack>-...`, infra/monitoring.py) and fails when there are none or
one is in ALARM. The local runtime makes no alarms: there, it checks the job only and says so.
Exit 0 when all is well, else 1 (the job) or 5 (the alarms), each problem on its own line.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from offload_cli.api import call, get_job
from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target

SMOKE_EMAIL = {
    "to": ["success@simulator.amazonses.com"],
    "subject": "offload smoke test",
    "text": "A deploy's smoke test (offload doctor): SES's simulator accepts and drops it.",
}
FINISHED = {"done", "dead", "cancelled"}


def doctor(target: Target, args: argparse.Namespace) -> int:
    job_id = str(
        call(
            target,
            "POST",
            target.endpoint("jobs"),
            headers={"idempotency-key": f"doctor-{uuid.uuid4()}"},
            json={"type": "send_email", "payload": SMOKE_EMAIL},
        )["jobId"]
    )
    job = _wait(target, job_id, args.timeout)
    if job["status"] != "done":
        print(f"FAIL job {job_id} is {job['status']}: {job.get('lastError') or 'no error recorded'}")
        return ExitCode.DEAD
    print(f"ok   job {job_id} done after {job['attempts']} attempt(s)")
    if target.local:
        print("--   alarms not checked: the local runtime makes none")
        return ExitCode.OK
    problems = alarm_problems(_alarms(args.stack, target), args.stack)
    for problem in problems:
        print(f"FAIL {problem}")
    if not problems:
        print(f"ok   the alarms of {args.stack} exist and none is in ALARM")
    return ExitCode.FAILED if problems else ExitCode.OK


def alarm_problems(alarms: list[dict[str, Any]], stack: str) -> list[str]:
    """What is wrong with the stack's alarms as CloudWatch lists them: none at all, or any in ALARM."""
    if not alarms:
        return [f"no CloudWatch alarm is named {stack}-...: is --stack the deployed stack's name?"]
    return [
        f"alarm {a['AlarmName']} is in ALARM: {a.get('StateReason', '')} ({a.get('AlarmDescription', '')})"
        for a in alarms
        if a.get("StateValue") == "ALARM"
    ]


def cloudwatch_alarms(client: Any, stack: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for page in client.get_paginator("describe_alarms").paginate(AlarmNamePrefix=f"{stack}-"):
        found.extend(page.get("MetricAlarms", []))
    return found


def _alarms(stack: str, target: Target) -> list[dict[str, Any]]:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    region = target.signer.region if target.signer and target.signer.region else _region_of(target.url)
    try:
        return cloudwatch_alarms(boto3.client("cloudwatch", region_name=region), stack)
    except (BotoCoreError, ClientError) as error:
        raise CliError(f"cannot list the stack's alarms: {error}", ExitCode.REFUSED) from None


def _region_of(url: str) -> str | None:
    host = url.split("://", 1)[-1].split("/", 1)[0].split(".")
    return host[2] if len(host) > 3 and host[1] == "execute-api" else None


def _wait(target: Target, job_id: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    job = get_job(target, job_id)
    while job["status"] not in FINISHED:
        if time.monotonic() > deadline:
            raise CliError(
                f"job {job_id} is still {job['status']} after {timeout:.0f} s", ExitCode.WAIT_TIMEOUT
            )
        time.sleep(1)
        job = get_job(target, job_id)
    return job
