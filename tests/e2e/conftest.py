"""One local runtime per test worker, shared by the e2e tests that talk to it over HTTP on loopback.

Its settings make the pipeline fast enough to watch retries and timeouts in seconds: short backoff,
no batching window, an 8 s worker timeout (webhook deliveries keep 5 s of it in reserve), a recovery sweep every 2 s. Each is a documented local
override (`RuntimeSettings` in local_runtime/runtime.py); the test-only job types are loaded through `extra_modules`.
"""

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from lambdas.config import KeyRole
from local_runtime.runtime import LocalRuntime, RuntimeSettings, local_template

WORKER = "lambdas.handlers.worker.handler"
DEAD_LETTER = "lambdas.handlers.dead_letter.handler"
# The dead-letter queue's batching window (30 s in the stack), shortened so that a check for "no second
# alert" can wait past the window that would gather a second letter, in seconds.
DLQ_BATCHING_WINDOW = 2
WORKER_TIMEOUT = 8
WORKER_VISIBILITY = 12
LEASE_SECONDS = 9
SCHEDULE_SECONDS = 2

E2E_CONTEXT = {
    "workerBatchingWindowSeconds": 0,
    "workerMaxConcurrency": 2,
    "backoffBaseSeconds": 1,
    "backoffCapSeconds": 2,
    # Two clients and the operator, as issue 9's walkthrough starts it; runtime.api_key is alpha's
    # (the console's and the CLI's tests show that one client never sees the other's jobs).
    "clientKeys": "alpha,beta",
}


@dataclass
class Client:
    runtime: LocalRuntime

    @property
    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.runtime.api_key}

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return requests.post(self.runtime.url + path, headers=self.headers, timeout=30, **kwargs)

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return requests.get(self.runtime.url + path, headers=self.headers, timeout=30, **kwargs)

    def local(self, what: str, **params: Any) -> Any:
        """The runtime's own endpoints, which answer the operator's key alone."""
        assert self.runtime.front_door is not None
        url = f"{self.runtime.front_door.base}/_local/{what}"
        (operator,) = [key.value for key in self.runtime.keys if key.role == KeyRole.OPERATOR]
        return requests.get(url, headers={"x-api-key": operator}, params=params, timeout=30).json()

    def submit(self, job_type: str, payload: dict[str, Any], **options: Any) -> str:
        response = self.post("jobs", json={"type": job_type, "payload": payload, **options})
        assert response.status_code == 202, response.text
        job_id: str = response.json()["jobId"]
        return job_id

    def job(self, job_id: str) -> dict[str, Any]:
        document: dict[str, Any] = self.get(f"jobs/{job_id}").json()
        return document

    def wait_for_status(self, job_id: str, statuses: set[str], timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["status"] in statuses:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job stayed {job['status']} for {timeout} s: {job}")
            time.sleep(0.3)

    def transitions(self, job_id: str) -> list[dict[str, Any]]:
        return [e for e in self.local("logs", event="job_transition") if e.get("jobId") == job_id]

    def wait_until(self, check: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.3)
        raise AssertionError(f"{what} not observed within {timeout} s")


def _short_dlq_window(template: dict[str, Any]) -> dict[str, Any]:
    resources = template["Resources"]
    (function,) = [
        logical_id
        for logical_id, r in resources.items()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler") == DEAD_LETTER
    ]
    mappings = [  # one per worker group's DLQ
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::EventSourceMapping"
        and r["Properties"]["FunctionName"] == {"Ref": function}
    ]
    assert mappings
    for mapping in mappings:
        mapping["MaximumBatchingWindowInSeconds"] = DLQ_BATCHING_WINDOW
    return template


@pytest.fixture(scope="session")
def runtime() -> Iterator[LocalRuntime]:
    settings = RuntimeSettings(
        port=0,
        template=_short_dlq_window(local_template(E2E_CONTEXT)),
        quiet=True,
        state_file=None,
        schedule_seconds=SCHEDULE_SECONDS,
        function_timeouts={WORKER: WORKER_TIMEOUT},
        source_visibility={WORKER: WORKER_VISIBILITY},
        env_overrides={"LEASE_SECONDS": str(LEASE_SECONDS), "RECOVERY_GRACE_SECONDS": "3"},
        extra_modules=("tests.e2e.job_types",),
    )
    started = LocalRuntime(settings).start()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def iam_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    """`make run RUN_ARGS="-c auth=iam"`: the runtime's default IAM mapping, its state file written."""
    state = tmp_path_factory.mktemp("iam-state") / "runtime.json"
    started = LocalRuntime(
        RuntimeSettings(port=0, context={"auth": "iam"}, quiet=True, state_file=state)
    ).start()
    yield started
    started.stop()


@pytest.fixture(scope="session")
def client(runtime: LocalRuntime) -> Client:
    return Client(runtime)
