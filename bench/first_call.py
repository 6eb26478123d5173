"""First invocation: each function's import plus its first call in a fresh process, against the function
a user would write instead (its peer, `bench/peers/`), and against a bare handler's.

All sides run in a fresh interpreter from the byte-compiled bundle (see cold_start), with the function's
environment, against moto's server, interleaved round by round. Times are the child's CPU time, as in
cold_start (the wall time is printed beside it).

- The goals: each function's import + first call <= 1.15 x its peer's. A peer is a whole function as
  Powertools' and pydantic's docs teach it (the api: `APIGatewayRestResolver(enable_validation=True)`,
  one pydantic POST route, a conditional PutItem and a SendMessage; the worker: `BatchProcessor` with
  partial batch failures, a pydantic message model, a conditional UpdateItem claim and an outcome
  UpdateItem; see each module), byte-compiled as the asset is. The queue consumers are fed a message
  for a job that does not exist (offload's worker and the peer's drop it, the dead_letter functions
  alert it), the recovery functions sweep an empty table, the schedules functions take a minute tick
  with no schedule due.
- Shown beside them, not goals: the same against the bare handler, which imports boto3 alone, creates
  its clients on first use as the functions do (one session, the retry and timeout settings of
  `lambdas.store.clients`) and replays the very calls the function's first invocation made (captured
  in this process by a botocore hook), a failed conditional write included: the floor no function
  with validation can reach. And each function that loads pydantic measured again with the pydantic
  modules its first call loads imported before the clock, which tells pydantic's share from offload's.
"""

import hashlib
import json
import shutil
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench import cold_start, submit
from bench.report import Figure
from bench.stack import API, EVENTS, Stack, api_event, context, counting_calls
from infra import bundling

ROUNDS = 7
PEER_GOAL = 1.15  # offload's import + first call over its peer's (issue 40)
PEERS = Path(__file__).resolve().parent / "peers"
_CHILD = """
import json, os, time
class Context:
    function_name = "bench"; memory_limit_in_mb = 256; aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    def get_remaining_time_in_millis(self): return 60_000
def clock(): return time.perf_counter(), time.process_time()
def since(start): wall, cpu = clock(); return [wall - start[0], cpu - start[1]]
event, calls = json.loads(os.environ["BENCH_EVENT"]), json.loads(os.environ["BENCH_CALLS"])
"""
_HANDLER = """
start = clock(); import {module} as module; imported = since(start)
start = clock(); response = module.handler(event, Context()); first = since(start)
assert not isinstance(response, dict) or response.get("statusCode", 202) == 202, response
print(json.dumps([imported, first]))
"""
_BARE = """
start = clock(); import boto3; from botocore.exceptions import ClientError; imported = since(start)
from botocore.config import Config
old_id, made = os.environ["BENCH_OLD_ID"], {}
def handler(event, context):
    new_id = os.urandom(16).hex()
    session = made.setdefault("", boto3.session.Session())
    config = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=3, read_timeout=10)
    for service, operation, params in calls:
        client = made.get(service) or made.setdefault(service, session.client(service, config=config))
        try:
            client._make_api_call(operation, json.loads(json.dumps(params).replace(old_id, new_id)))
        except ClientError:
            pass  # a conditional write the function saw fail too
start = clock(); handler(event, Context()); print(json.dumps([imported, since(start)]))
"""
_EMAIL = {"to": ["someone@example.com"], "subject": "hello", "text": "first call"}
_CONSUMERS = ("worker", "dead_letter", "recovery", "schedules")
_PYDANTIC = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")
_LISTED = """
import sys
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {packages!r})))
"""
_PRELOADED = """
import importlib
for name in {modules!r}: importlib.import_module(name)
"""
Sample = tuple[float, float]  # (wall, CPU) seconds


def peers_dir() -> Path:
    """`bench/peers` as the package `peers`, byte-compiled as the asset is, once per its content."""
    digest = hashlib.sha256()
    for path in sorted(PEERS.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    target = Path(tempfile.gettempdir()) / f"offload-bench-peers-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="offload-bench-peers-building-"))
    shutil.copytree(PEERS, building / "peers", ignore=shutil.ignore_patterns("__pycache__"))
    bundling.compile_bytecode(building, sys.executable)
    building.rename(target)
    return target


def _peer(function: str) -> str:
    """The child's code for the peer: its compiled package on the path before the clock."""
    return f"import sys; sys.path.insert(0, {str(peers_dir())!r})\n" + _HANDLER.format(
        module=f"peers.{function}"
    )


def _consumer_event(function: str) -> dict[str, Any]:
    if function == "recovery":
        event: dict[str, Any] = json.loads((EVENTS / "schedule.json").read_text())
        return event
    if function == "schedules":
        return {"tick": "2026-12-01T00:00:00+00:00"}
    record = json.loads((EVENTS / "sqs_batch.json").read_text())["Records"][0]
    record["body"] = json.dumps({"jobId": str(uuid.uuid4())})
    return {"Records": [record]}


def _consumer_calls(stack: Stack, function: str, event: dict[str, Any]) -> list[Any]:
    """The AWS calls the function's invocation makes, run here in-process with its environment."""
    import importlib

    stack.use(f"lambdas.handlers.{function}.handler")
    module = importlib.import_module(f"lambdas.handlers.{function}")
    with counting_calls() as log:
        module.handler(event, context(function))
    return log.params


def _cases(stack: Stack) -> dict[str, tuple[str, dict[str, Any], list[Any], str]]:
    """function -> (handler path, event, the calls its first invocation makes, the id to make fresh)."""
    stack.use(API)
    old_id, calls = submit.captured_calls({"type": "send_email", "payload": _EMAIL})
    cases = {"api": (API, api_event({"type": "send_email", "payload": _EMAIL}), calls, old_id)}
    for function in _CONSUMERS:
        event = _consumer_event(function)
        calls = _consumer_calls(stack, function, event)
        cases[function] = (f"lambdas.handlers.{function}.handler", event, calls, "no-id-to-replace")
    return cases


def _run(stack: Stack, handler: str, code: str, event: Any, calls: list[Any], old_id: str) -> list[Sample]:
    env = {**stack.env(handler), "BENCH_EVENT": json.dumps(event), "BENCH_CALLS": json.dumps(calls)}
    env = cold_start.lambda_env({**env, "BENCH_OLD_ID": old_id})
    output = cold_start.run_in_bundle(cold_start.bundle_dir(), _CHILD + code, True, env)
    (imported_wall, imported_cpu), (first_wall, first_cpu) = json.loads(output)
    return [(imported_wall, imported_cpu), (first_wall, first_cpu)]


def _pydantic_modules(stack: Stack, handler: str, event: Any, calls: list[Any], old_id: str) -> list[str]:
    """The pydantic modules loaded by the function's import and first call, in a fresh process."""
    env = {**stack.env(handler), "BENCH_EVENT": json.dumps(event), "BENCH_CALLS": json.dumps(calls)}
    env = cold_start.lambda_env({**env, "BENCH_OLD_ID": old_id})
    code = _CHILD + _HANDLER.format(module=handler.rsplit(".", 1)[0]) + _LISTED.format(packages=_PYDANTIC)
    modules: list[str] = json.loads(cold_start.run_in_bundle(cold_start.bundle_dir(), code, True, env))
    return modules


def measure(stack: Stack) -> list[Figure]:
    cases = _cases(stack)
    pydantic = {function: _pydantic_modules(stack, *case) for function, case in cases.items()}
    samples: dict[tuple[str, str], list[list[Sample]]] = {}
    for _ in range(ROUNDS):
        stack.drain()
        for function, (handler, event, calls, old_id) in cases.items():
            code = _HANDLER.format(module=handler.rsplit(".", 1)[0])
            sides = [("function", code), ("peer", _peer(function)), ("bare", _BARE)]
            if pydantic[function]:
                sides.append(("pydantic loaded", _PRELOADED.format(modules=pydantic[function]) + code))
            for side, side_code in sides:
                samples.setdefault((function, side), []).append(
                    _run(stack, handler, side_code, event, calls, old_id)
                )

    def first(function: str, side: str) -> Sample:
        return cold_start.medians([call for _, call in samples[(function, side)]])

    def in_all(function: str, side: str) -> Sample:
        pairs = samples[(function, side)]
        return cold_start.medians([(i[0] + c[0], i[1] + c[1]) for i, c in pairs])

    figures = []
    for function in cases:
        label = "api: import + first POST /jobs" if function == "api" else f"{function}: import + first call"
        figures.append(
            cold_start.cpu_ratio(
                f"{label} vs peer",
                in_all(function, "function"),
                in_all(function, "peer"),
                PEER_GOAL,
                (function, "peer"),
            )
        )
        bare = cold_start.cpu_ratio(
            f"{label} vs bare",
            in_all(function, "function"),
            in_all(function, "bare"),
            PEER_GOAL,
            (function, "bare"),
        )
        figures.append(replace(bare, checked=False))
        if pydantic[function]:
            without = cold_start.cpu_ratio(
                f"{function}: the same, pydantic loaded first",
                in_all(function, "pydantic loaded"),
                in_all(function, "bare"),
                PEER_GOAL,
                (function, "bare"),
            )
            loaded = f"{len(pydantic[function])} pydantic modules imported before the clock"
            figures.append(replace(without, detail=f"{without.detail}; {loaded}", checked=False))
    first_post = cold_start.cpu_ratio(
        "first POST /jobs vs a bare handler's first",
        first("api", "function"),
        first("api", "bare"),
        PEER_GOAL,
        ("api", "bare"),
    )
    figures.append(replace(first_post, checked=False))
    return [replace(f, detail=f"{f.detail}; medians of {ROUNDS}") for f in figures]
