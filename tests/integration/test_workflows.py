"""Workflows end to end in process: submitted through the API, claimed by the worker, run by the real
durable handler on the durable SDK's local engine (tests/support/workflows.py), read, sent events and
cancelled through the API. Each test names the line it was seen to fail against."""

from typing import Any

import pytest

from tests.support.pipeline import Pipeline
from tests.support.stores import Clock
from tests.support.workflows import local_workflows, wait_until

FAST = {"email": "new@example.com", "pauseSeconds": 1, "convertWithinSeconds": 30}
OTHER_KEY = "other-client-key"


@pytest.fixture
def engine(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> Any:
    with local_workflows(monkeypatch, pipeline.env) as local:
        yield local


def sent_subjects() -> list[str]:
    from moto.backends import get_backend

    backend = get_backend("ses")["123456789012"]["us-east-1"]
    return [m.subject for m in backend.sent_messages]


def status_of(pipeline: Pipeline, job_id: str) -> str:
    return str(pipeline.job(job_id)["status"])


def test_an_event_resumes_a_waiting_workflow_whose_steps_the_job_shows(
    pipeline: Pipeline, engine: Any
) -> None:
    """Submitted, started by the worker, waiting for `converted` (with `waitingFor`), resumed by POST
    /jobs/{id}/events, done with the event's data; the welcome step shows once, done. Seen failing with
    `StoreJournal.waiting_for_event` not passing `callback_id` on (409 not_waiting)."""
    job_id = pipeline.submit("onboarding", FAST)
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "event")
    waiting = pipeline.job(job_id)
    assert waiting["status"] == "waiting"
    assert waiting["waitingFor"]["key"] == "converted"
    assert [(s["name"], s["status"], s["attempts"]) for s in waiting["steps"]] == [("welcome", "done", 1)]

    answer = pipeline.request(
        "POST", f"/jobs/{job_id}/events", {"name": "converted", "data": {"plan": "pro"}}
    )
    assert answer.status == 202, answer.body
    wait_until(lambda: status_of(pipeline, job_id) == "done")
    done = pipeline.job(job_id)
    assert done["result"]["converted"] == {"plan": "pro"}
    assert "waitingFor" not in done or done["waitingFor"] is None
    assert sent_subjects() == ["Welcome!"]


def test_an_event_the_workflow_does_not_wait_for_is_refused(pipeline: Pipeline, engine: Any) -> None:
    """Another name while it waits, and any event to a plain job: 409 not_waiting. Seen failing with
    `event_callback`'s name check dropped (202 for `churned`)."""
    job_id = pipeline.submit("onboarding", FAST)
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "event")
    answer = pipeline.request("POST", f"/jobs/{job_id}/events", {"name": "churned"})
    assert answer.status == 409
    assert answer.body["error"]["code"] == "not_waiting"


def test_another_clients_event_is_refused_as_not_found(pipeline: Pipeline, engine: Any) -> None:
    """A job another client's key submitted is not found, and its wait goes on. Seen failing with
    `send_event` reading the job with `store.get` instead of `find_job` (202)."""
    job_id = pipeline.submit("onboarding", FAST)
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "event")
    answer = pipeline.request("POST", f"/jobs/{job_id}/events", {"name": "converted"}, api_key_id=OTHER_KEY)
    assert answer.status == 404
    assert answer.body["error"]["code"] == "job_not_found"
    assert status_of(pipeline, job_id) == "waiting"


def test_cancel_stops_a_sleeping_workflow_and_no_later_step_runs(pipeline: Pipeline, engine: Any) -> None:
    """Cancelled while it sleeps: `cancelled`, the execution stopped, no follow-up or wait after it.
    Seen failing with `cancel_job`'s workflow branch dropped (409 not_cancellable: a waiting job that is
    no fan-out)."""
    job_id = pipeline.submit("onboarding", {**FAST, "pauseSeconds": 30})
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "sleep")
    answer = pipeline.request("POST", f"/jobs/{job_id}/cancel")
    assert answer.status == 200, answer.body
    assert answer.body["status"] == "cancelled"
    result = engine.wait_for_result(job_id, timeout=30)
    assert result.execution_status.value == "STOPPED"
    assert status_of(pipeline, job_id) == "cancelled"
    assert sent_subjects() == ["Welcome!"]


def test_a_redelivered_message_finds_the_same_execution(pipeline: Pipeline, engine: Any) -> None:
    """The worker's start twice for one job (a redelivery after its lease expired) starts one
    execution: the emulated name rule. Seen failing with `LocalDurableFunctions.start`'s lookup of
    `_started` dropped (two executions, two welcomes)."""
    from lambdas.lifecycle.workflows.start import execution_input, execution_name
    from tests.support.stores import store_from_env

    job_id = pipeline.submit("onboarding", FAST)
    pipeline.run_worker()
    store = store_from_env(pipeline.env)
    job = store.get(job_id)
    assert job is not None
    engine.start(execution_name(job), execution_input(job))
    assert engine.executions() == 1
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "event")
    assert sent_subjects() == ["Welcome!"]


def test_the_workers_message_is_deleted_once_the_execution_started(pipeline: Pipeline, engine: Any) -> None:
    """Outcome.STARTED is not kept: SQS does not deliver a started workflow's message again. Seen
    failing with STARTED added to `_KEEP_MESSAGE`."""
    pipeline.submit("onboarding", FAST)
    response = pipeline.run_worker()
    assert response == {"batchItemFailures": []}
    assert pipeline.visible(pipeline.queue_url) == 0


def test_a_step_failing_for_good_ends_the_workflow_dead_with_one_alert(
    pipeline: Pipeline, engine: Any
) -> None:
    """A step's PermanentJobError: the job `dead` with the step's error and the step shown failed, its
    letter in the DLQ, one alert. Seen failing with `StoreRuntime.fail`'s forward to the dead letters
    dropped (no alert)."""
    from pydantic import BaseModel

    from lambdas.jobs import registry
    from lambdas.jobs.base import Flow, JobType, PermanentJobError

    class Empty(BaseModel):
        pass

    def refuse() -> None:
        raise PermanentJobError("the account is closed")

    def run(payload: Empty, flow: Flow) -> None:
        flow.step("charge", refuse)

    registry.register(JobType("test_refusing_workflow", Empty, run, workflow=True))
    job_id = pipeline.submit("test_refusing_workflow", {})
    pipeline.run_worker()
    wait_until(lambda: status_of(pipeline, job_id) == "dead")
    wait_until(lambda: pipeline.visible(pipeline.dlq_url) == 1)
    pipeline.run_dead_letter()

    job = pipeline.job(job_id)
    assert job["lastError"] == "the account is closed"
    assert [(s["name"], s["status"], s["error"]) for s in job["steps"]] == [
        ("charge", "failed", "the account is closed")
    ]
    alerts = pipeline.alerts()
    assert [(a["jobId"], a["jobType"]) for a in alerts] == [(job_id, "test_refusing_workflow")]


def test_an_event_after_its_wait_ended_is_refused_not_an_error(pipeline: Pipeline, engine: Any) -> None:
    """The wait's callback was completed (the engine has not replayed the workflow yet, so the job still
    says it waits): a second event is 409 not_waiting, not a 500. Seen failing with `send_event`'s
    `except CallbackGoneError` dropped (500)."""
    from tests.support.stores import store_from_env

    job_id = pipeline.submit("onboarding", FAST)
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "event")
    callback = store_from_env(pipeline.env).workflows().event_callback(job_id, "converted")
    assert callback is not None
    engine.pause(job_id)
    engine.complete(callback, b'{"first": true}')
    try:
        answer = pipeline.request("POST", f"/jobs/{job_id}/events", {"name": "converted"})
        assert answer.status == 409, answer.body
        assert answer.body["error"]["code"] == "not_waiting"
    finally:
        engine.resume(job_id)
    wait_until(lambda: status_of(pipeline, job_id) == "done")
    assert pipeline.job(job_id)["result"]["converted"] == {"first": True}


def test_a_dead_workflows_retry_runs_it_again_from_its_first_step(pipeline: Pipeline, engine: Any) -> None:
    """Retried by its client, a dead workflow runs in a new execution (the old name would find the
    ended one) from its first step. Seen failing with `execution_name` ignoring `reopened_at` (the
    retried job never leaves `processing`)."""
    from pydantic import BaseModel

    from lambdas.jobs import registry
    from lambdas.jobs.base import Flow, JobType, PermanentJobError

    class Empty(BaseModel):
        pass

    calls: list[str] = []

    def first(tries: list[str]) -> str:
        tries.append("first")
        return "ok"

    def second(tries: list[str]) -> str:
        tries.append("second")
        if tries.count("second") == 1:
            raise PermanentJobError("not yet")
        return "ok"

    def run(payload: Empty, flow: Flow) -> str:
        flow.step("first", first, calls)
        return str(flow.step("second", second, calls))

    registry.register(JobType("test_retried_workflow", Empty, run, workflow=True))
    job_id = pipeline.submit("test_retried_workflow", {})
    pipeline.run_worker()
    wait_until(lambda: status_of(pipeline, job_id) == "dead")

    assert pipeline.request("POST", f"/jobs/{job_id}/retry").status == 202
    pipeline.run_worker()
    wait_until(lambda: status_of(pipeline, job_id) == "done")

    assert engine.executions() == 2
    assert calls == ["first", "second", "first", "second"]
    steps = pipeline.job(job_id)["steps"]
    assert [(s["name"], s["status"], s["attempts"]) for s in steps] == [
        ("first", "done", 1),
        ("second", "done", 1),
    ]


def timed_out_workflow(pipeline: Pipeline, engine: Any, clock: Clock) -> str:
    """A workflow sleeping for an hour whose execution Lambda ended at its timeout (no end written),
    the clock past its deadline; its job id."""
    from lambdas import config
    from tests.support.stores import store_from_env

    job_id = pipeline.submit("onboarding", {**FAST, "pauseSeconds": 3600})
    pipeline.run_worker()
    wait_until(lambda: (pipeline.job(job_id).get("waitingFor") or {}).get("limit") == "sleep")
    arn = store_from_env(pipeline.env).workflows().execution_arn(job_id)
    assert arn
    engine.stop(arn, "Execution timed out")
    clock.advance(config.WORKFLOW_EXECUTION_TIMEOUT_SECONDS + 1)
    return job_id


def test_a_workflow_past_its_execution_timeout_ends_dead_once_by_the_sweep(
    pipeline: Pipeline, engine: Any, clock: Clock
) -> None:
    """Lambda ended the execution at its timeout without the job's end: the sweep past the deadline
    writes `dead` with the reason, once. Seen failing with `Sweeper._settle`'s `_timed_out_workflow`
    check removed (the sleeping workflow stayed `waiting` for good)."""
    job_id = timed_out_workflow(pipeline, engine, clock)

    first = pipeline.run_recovery()
    again = pipeline.run_recovery()

    job = pipeline.job(job_id)
    assert job["status"] == "dead"
    assert "execution timeout" in job["lastError"]
    assert (first["workflowsTimedOut"], again["workflowsTimedOut"]) == (1, 0)


def test_a_workflow_the_sweep_ends_dead_raises_one_alert_and_no_other_sweep_another(
    pipeline: Pipeline, engine: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workflow the sweep writes `dead` (its execution timed out) is counted in one alert, as any dead
    job is: the sweep sends its letter to its group's DLQ and the dead-letter function alerts once. A
    sweep that overlapped it (it read the job still `waiting`) and a later one send nothing. Seen failing
    with the forward in `Sweeper._timed_out_workflow` removed (no letter, no alert), and with it moved
    above the fenced `workflows.die` (the overlapping sweep's letter too: two on the DLQ)."""
    from lambdas.models.job import JobStatus
    from lambdas.store.jobs import JobStore
    from tests.support.stores import store_from_env

    job_id = timed_out_workflow(pipeline, engine, clock)
    read_before = list(store_from_env(pipeline.env).by_status(JobStatus.WAITING))
    assert [job.job_id for job in read_before] == [job_id]

    first = pipeline.run_recovery()
    later = pipeline.run_recovery()
    monkeypatch.setattr(
        JobStore,
        "by_status",
        lambda _, status, due_before=None: read_before if status is JobStatus.WAITING else [],
    )
    overlapping = pipeline.run_recovery()
    letters = sum(pipeline.visible(url) for url in (pipeline.dlq_url, *pipeline.group_dlq_urls))
    pipeline.drain()

    assert [r["workflowsTimedOut"] for r in (first, later, overlapping)] == [1, 0, 0]
    assert [r["errors"] for r in (first, later, overlapping)] == [0, 0, 0]
    assert letters == 1
    (alert,) = pipeline.alerts()
    assert alert["jobId"] == job_id
    assert "execution timeout" in alert["lastError"]
    assert pipeline.job(job_id)["status"] == "dead"


def test_a_workflow_types_limit_applies_to_starting_its_execution(
    pipeline: Pipeline, engine: Any, clock: Clock
) -> None:
    """Over its type's limit, a workflow job waits `pending` before its claim, as any type's start does,
    and starts no execution. Seen failing with `Worker.process`'s `if admission.refused is not None:`
    as `if False:` (neither waited: two executions)."""
    import dataclasses

    from lambdas.jobs import registry
    from lambdas.models.limits import Limit
    from tests.support.workflows import onboarding_module

    registry.unregister("onboarding")  # the engine fixture's, without a limit
    one_a_minute = Limit(per_second=1 / 60)
    registry.register(dataclasses.replace(onboarding_module().JOB_TYPE, limits=one_a_minute))
    first = pipeline.submit("onboarding", FAST)
    second = pipeline.submit("onboarding", FAST)

    pipeline.run_worker()

    waits = [(pipeline.job(job_id).get("waitingFor") or {}).get("limit") for job_id in (first, second)]
    assert sorted(map(str, waits)) == ["None", "perSecond"]
    assert engine.executions() == 1
