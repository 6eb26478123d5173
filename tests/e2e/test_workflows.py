"""Workflows on the local runtime, over HTTP: the stack's durable function and its alias `live`, run by the
durable SDK's own local service (local_runtime/durable.py) in the runtime's function processes, with
real sleeps of a second or two. The onboarding example (examples/workflow_jobs) and a type that kills
its own process (tests/e2e/flow_test_jobs) are the stack's `jobPackages`.

Each test names the line it was seen to fail against.
"""

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError

from infra.bundling import REPO_ROOT
from local_runtime.runtime import LocalRuntime, RuntimeSettings
from tests.e2e.conftest import Client

pytestmark = pytest.mark.slow

PACKAGES = [str(REPO_ROOT / "examples" / "workflow_jobs"), str(Path(__file__).parent / "flow_test_jobs")]


@pytest.fixture(scope="module")
def flows() -> Iterator[Client]:
    settings = RuntimeSettings(
        port=0,
        context={"jobPackages": PACKAGES, "workerBatchingWindowSeconds": 0, "clientKeys": "alpha,beta"},
        quiet=True,
        state_file=None,
    )
    runtime = LocalRuntime(settings).start()
    yield Client(runtime)
    runtime.stop()


def onboarding(flows: Client, pause: int = 1, convert_within: int = 30) -> str:
    payload = {"email": "ada@example.com", "pauseSeconds": pause, "convertWithinSeconds": convert_within}
    return flows.submit("onboarding", payload)


def waiting_for(flows: Client, job_id: str, limit: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        job = flows.job(job_id)
        return job if (job.get("waitingFor") or {}).get("limit") == limit else None

    job: dict[str, Any] = flows.wait_until(found, timeout=60, what=f"{job_id} waiting for {limit}")
    return job


def lambda_client(runtime: LocalRuntime) -> Any:
    """Lambda's API as the function processes reach it (AWS_ENDPOINT_URL_LAMBDA)."""
    assert runtime.durable is not None
    assert runtime.provisioned is not None
    return boto3.client(
        "lambda",
        endpoint_url=runtime.durable.url,
        region_name=runtime.provisioned.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def execution_status(runtime: LocalRuntime, job_id: str) -> str:
    assert runtime.durable is not None
    (function,) = runtime.durable.functions()
    listed = lambda_client(runtime).list_durable_executions_by_function(
        FunctionName=function.name, DurableExecutionName=job_id
    )
    (execution,) = listed["DurableExecutions"]
    return str(execution["Status"])


def steps(job: dict[str, Any]) -> list[tuple[str, str]]:
    return [(step["name"], step["status"]) for step in job.get("steps") or []]


def test_a_workflow_without_its_event_times_out_to_none_and_follows_up(flows: Client) -> None:
    """The wait's timeout returns None, so the follow-up is sent. Seen failing with `DurableFlow.
    wait_for_event`'s `raw = None` after CallbackTimeoutError turned into `raise` (the job ended dead)."""
    job_id = onboarding(flows, convert_within=1)

    job = flows.wait_for_status(job_id, {"done", "dead"}, timeout=60)

    assert job["status"] == "done", job
    assert steps(job) == [("welcome", "done"), ("follow_up", "done")]
    assert set(job["result"]) == {"welcome", "followUp"}


def test_an_event_resumes_the_waiting_workflow_and_another_clients_is_refused(flows: Client) -> None:
    """`POST /jobs/{id}/events` completes the wait's callback on the service; beta's event for alpha's job
    is not found. Seen failing with `send_event` completing the callback with `b"null"` instead of the
    event's data (the workflow went on to its follow-up)."""
    job_id = onboarding(flows)
    waiting_for(flows, job_id, "event")
    (beta,) = [key.value for key in flows.runtime.keys if key.name == "beta"]
    event = {"name": "converted", "data": {"plan": "pro"}}

    url = f"{flows.runtime.url}jobs/{job_id}/events"
    refused = requests.post(url, json=event, headers={"x-api-key": beta}, timeout=30)
    sent = flows.post(f"jobs/{job_id}/events", json=event)

    assert refused.status_code == 404, refused.text
    assert sent.status_code == 202, sent.text
    job = flows.wait_for_status(job_id, {"done", "dead"}, timeout=30)
    assert job["result"]["converted"] == {"plan": "pro"}
    assert steps(job) == [("welcome", "done")]


def test_cancel_stops_a_sleeping_workflow_and_no_later_step_runs(flows: Client) -> None:
    """The cancel stops the execution on the service: past the sleep's end the job is still cancelled
    with its one step, and its execution is stopped, not woken. Seen failing with `cancel_workflow`'s
    `engine.stop(...)` removed (the execution woke, found the job gone and ended SUCCEEDED)."""
    job_id = onboarding(flows, pause=2, convert_within=1)
    sleeping = waiting_for(flows, job_id, "sleep")

    answer = flows.post(f"jobs/{job_id}/cancel")

    assert answer.status_code in (200, 202), answer.text
    assert flows.job(job_id)["status"] == "cancelled"
    wake = time.time() + 2 + 2  # past the sleep (2 s) and the wait's timeout (1 s) that would follow
    time.sleep(max(0.0, wake - time.time()))
    job = flows.job(job_id)
    assert job["status"] == "cancelled"
    assert steps(job) == steps(sleeping) == [("welcome", "done")]
    assert execution_status(flows.runtime, job_id) == "STOPPED"


def test_a_process_killed_mid_workflow_resumes_and_a_finished_step_does_not_run_again(
    flows: Client, tmp_path: Path
) -> None:
    """The second step's first attempt kills its function process; the service invokes the execution
    again, which replays the first step from its checkpoint. Seen failing with `DurableFlow.step` calling
    `body` itself instead of `self._durable.step(...)` (the effect happened twice)."""
    job_id = flows.submit("crash_once", {"folder": str(tmp_path)})

    job = flows.wait_for_status(job_id, {"done", "dead"}, timeout=60)

    assert job["status"] == "done", job
    assert (tmp_path / "crashed").exists()  # the process was killed once
    assert (tmp_path / "effects").read_text() == "effect\n"
    assert job["result"] == {"effect": 1, "after": "survived"}


def test_the_durable_function_alias_starts_one_execution_per_name(flows: Client) -> None:
    """Emulated Lambda rules (local_runtime/durable.py): the alias resolves to its function; an Invoke
    with a name already used and the same payload answers with that execution, with another payload it
    is refused. Seen failing with `DurableFunctions.start_execution`'s lookup of `self._started` removed
    (a second execution)."""
    runtime = flows.runtime
    assert runtime.durable is not None
    (function,) = runtime.durable.functions()
    alias = f"{function.arn}:live"
    lambda_ = lambda_client(runtime)
    name = f"rule-{time.time_ns()}"
    payload = json.dumps({"jobId": name})  # no such job: the execution ends at once, writing nothing
    before = runtime.durable.executions()

    first = lambda_.invoke(
        FunctionName=alias, InvocationType="Event", DurableExecutionName=name, Payload=payload
    )
    again = lambda_.invoke(
        FunctionName=alias, InvocationType="Event", DurableExecutionName=name, Payload=payload
    )
    with pytest.raises(ClientError) as other:
        lambda_.invoke(FunctionName=alias, InvocationType="Event", DurableExecutionName=name, Payload="{}")
    with pytest.raises(ClientError) as unknown:
        lambda_.invoke(FunctionName=f"{function.arn}:other", InvocationType="Event", Payload=payload)

    assert first["DurableExecutionArn"] == again["DurableExecutionArn"]
    assert runtime.durable.executions() == before + 1
    assert other.value.response["Error"]["Code"] == "DurableExecutionAlreadyStartedException"
    assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"


XSS = "<img src=x onerror=alert(1)>"


def test_the_console_shows_a_workflows_steps_as_a_timeline_in_text(flows: Client) -> None:
    """The job page's Steps table: each step in the order it started, with its status and error, names
    and errors shown as text (no dialog opens). Seen failing with `stepsTimeline`'s step name cell as
    `el('td', {}, step.status)` (the step's name was missing from its row)."""
    from playwright.sync_api import Dialog, expect, sync_playwright

    from tests.support.browser import MISSING, find_chromium

    job_id = flows.submit("step_fails", {"step": f"charge {XSS}", "error": f"card declined {XSS}"})
    flows.wait_for_status(job_id, {"dead"}, timeout=60)
    executable = find_chromium()
    if executable is None:
        pytest.fail(MISSING)
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        page = browser.new_page()
        page.on("dialog", dismiss)
        page.goto(f"{flows.runtime.url}console")
        page.get_by_label("API key").fill(flows.runtime.api_key)
        page.get_by_role("button", name="Sign in").click()
        page.goto(f"{flows.runtime.url}console#/jobs/{job_id}")

        rows = page.get_by_role("table", name="Steps, in the order they started").get_by_role("row")
        expect(rows).to_have_count(3, timeout=20_000)  # the heading's row, then one a step
        expect(rows.nth(1)).to_contain_text("first")
        expect(rows.nth(1)).to_contain_text("done")
        expect(rows.nth(2)).to_contain_text(f"charge {XSS}")
        expect(rows.nth(2)).to_contain_text(f"card declined {XSS}")
        browser.close()
    assert dialogs == []
