"""The whole pipeline on loopback, built from the synthesized stack.

Start order: synthesize the template, start moto's server, create the template's resources in it,
then the functions' warm pools, the event source mappings, the schedule, the alert collector and the
HTTP front door. Stop order is the reverse, and every process the runtime started is ended.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import secrets
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lambdas import config
from lambdas.config import KeyRole
from lambdas.models.iam import IamCallers
from local_runtime import template as prov
from local_runtime.alerts import AlertCollector
from local_runtime.console import Console, iam_banner, startup_banner
from local_runtime.context import DEFAULT_ACCOUNT
from local_runtime.durable import DurableFunctions
from local_runtime.esm import DEFAULT_CONCURRENCY, BatchOutcome, SqsEventSource
from local_runtime.front_door import ApiKey, FrontDoor, Gateway, ensure_port_free
from local_runtime.job_secrets import SECRETS_PATH, fill_secrets
from local_runtime.lambda_pool import FunctionConfig, FunctionPool, Invocation
from local_runtime.lambda_worker import EXTRA_MODULES_ENV
from local_runtime.moto_server import MotoServer
from local_runtime.reload import CodeWatcher
from local_runtime.scheduler import Scheduler
from local_runtime.sigv4 import IamSigner, SignatureCheck, signers_for
from local_runtime.state import REPO_ROOT, STATE_FILE, remove_state, write_state

DEFAULT_PORT = 3000
# CDK context the local stack is synthesized with: webhooks may be plain HTTP (to loopback receivers),
# and warnings that only matter in an AWS account are left out.
LOCAL_CONTEXT: Mapping[str, Any] = {"allowHttpWebhooks": True, "localRuntime": True}
# Environment every local function gets on top of the template's.
LOCAL_FUNCTION_ENV: Mapping[str, str] = {
    # Local only: lets webhook jobs deliver to 127.0.0.1; the deployed stack never sets it.
    config.ENV_WEBHOOK_ALLOW_LOOPBACK: "true",
    # There is no X-Ray daemon on this machine.
    "POWERTOOLS_TRACE_DISABLED": "true",
    "TZ": "UTC",
    "LANG": "C.UTF-8",
}
API_ENVIRONMENTS = 4  # concurrent API requests served at once (API Gateway has no such limit)
DURABLE_ENVIRONMENTS = 2  # concurrent invocations of a durable function (its executions' replays)


@dataclass
class RuntimeSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT  # 0 picks a free port
    moto_port: int = 0
    api_key: str | None = None  # the first client key's value; generated when not given
    context: dict[str, Any] = field(default_factory=dict)  # CDK context on top of LOCAL_CONTEXT
    template: dict[str, Any] | None = None  # an already synthesized template (skips synth)
    # Development and test speed-ups; each one is a documented difference from the deployed stack.
    schedule_seconds: float | None = None  # run scheduled rules this often instead (not Scheduler's)
    # handler -> Timeout, and handler -> its queues' VisibilityTimeout, of every function of that handler
    # (the workers of all worker groups share one).
    function_timeouts: dict[str, int] = field(default_factory=dict)
    source_visibility: dict[str, int] = field(default_factory=dict)
    env_overrides: dict[str, str] = field(default_factory=dict)  # on top of every function's environment
    extra_modules: tuple[str, ...] = ()  # test only: imported in every function process
    verbose: bool = False
    quiet: bool = False
    state_file: Path | None = STATE_FILE
    # The job types' secrets' values (local_runtime/job_secrets.py), in the project's own folder.
    secrets_file: Path = field(default_factory=lambda: project_root() / SECRETS_PATH)
    reload: bool = False  # `make run`: new function environments when lambdas/ or a package changes


def project_root() -> Path:
    """The folder of the project the runtime serves: where it starts when a `cdk.json` is there (a
    user's project of job types), else offload's checkout."""
    here = Path.cwd()
    if (here / "cdk.json").is_file() and here.resolve() != REPO_ROOT:
        return here
    return REPO_ROOT


def project_context() -> dict[str, Any]:
    """A user's project's own CDK context (its `jobPackages`...), when the runtime starts in one (offload's
    own cdk.json the synth reads anyway)."""
    root = project_root()
    if root == REPO_ROOT:
        return {}
    context: dict[str, Any] = json.loads((root / "cdk.json").read_text()).get("context", {})
    return context


# `-c auth=iam` without a mapping of its own: one client and one operator role in moto's account.
LOCAL_IAM_CONTEXT: Mapping[str, Any] = {
    "iamClients": {"default": f"arn:aws:iam::{DEFAULT_ACCOUNT}:role/offload-default-client"},
    "iamOperators": [f"arn:aws:iam::{DEFAULT_ACCOUNT}:role/offload-operator"],
}


def local_template(context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The stack's template, synthesized in-process with the local context (no assets are bundled)."""
    # The CDK libraries run on the machine's Node (as `make` sets it): its end-of-life banner is noise.
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from infra.synth import synthesize

    given = dict(context or {})
    if given.get("auth") == config.AuthMode.IAM and "iamClients" not in given:
        given = {**LOCAL_IAM_CONTEXT, **given}
    return synthesize(context={**project_context(), **LOCAL_CONTEXT, **given})


def job_package_paths(context: Mapping[str, Any], *, parents: bool = True) -> list[str]:
    """Where the functions import the `jobPackages` folders from (installed ones are on sys.path), or
    with `parents=False` the folders themselves."""
    from infra.job_types import package_folders

    folders = package_folders({**project_context(), **context}.get("jobPackages"))
    return [str(folder.parent if parents else folder) for folder in folders]


def patched_template(template: Mapping[str, Any], settings: RuntimeSettings) -> dict[str, Any]:
    """The template with the settings' timeout and visibility overrides applied (a copy)."""
    patched = copy.deepcopy(dict(template))
    resources = patched.get("Resources", {})
    by_handler: dict[str | None, list[str]] = {}
    for logical_id, props in resources.items():
        if props.get("Type") == "AWS::Lambda::Function":
            by_handler.setdefault(props.get("Properties", {}).get("Handler"), []).append(logical_id)
    for handler, seconds in settings.function_timeouts.items():
        for function in _require(by_handler, handler):
            resources[function]["Properties"]["Timeout"] = seconds
    for handler, seconds in settings.source_visibility.items():
        functions = set(_require(by_handler, handler))
        for definition in resources.values():
            props = definition.get("Properties", {})
            if definition.get("Type") != "AWS::Lambda::EventSourceMapping":
                continue
            if prov.referenced_id(props.get("FunctionName")) in functions:
                queue = prov.referenced_id(props.get("EventSourceArn"))
                if queue is not None:
                    resources[queue]["Properties"]["VisibilityTimeout"] = seconds
    return patched


def _new_key_value() -> str:
    return f"local-{secrets.token_urlsafe(18)}"


def local_keys(specs: list[prov.ApiKeySpec], first_client_value: str) -> list[ApiKey]:
    """A value for each key of the template; the first client key gets `first_client_value` (given with
    --api-key, or the one `apiKey` in .local/runtime.json names). Without any key in the template, one
    client key, so the API still has a key to check."""
    if not specs:
        return [ApiKey(id="local", value=first_client_value)]
    given = iter([first_client_value])
    keys = []
    for spec in specs:
        value = next(given, None) if spec.role == KeyRole.CLIENT else None
        keys.append(ApiKey(id=spec.id, value=value or _new_key_value(), name=spec.name, role=spec.role))
    return keys


def _require(by_handler: Mapping[str | None, list[str]], handler: str) -> list[str]:
    if handler not in by_handler:
        raise ValueError(f"no function with handler {handler!r} in the template")
    return by_handler[handler]


class LocalRuntime:
    def __init__(self, settings: RuntimeSettings | None = None) -> None:
        self.settings = settings or RuntimeSettings()
        self.console = Console(verbose=self.settings.verbose, quiet=self.settings.quiet)
        self.api_key = self.settings.api_key or _new_key_value()
        self.keys: list[ApiKey] = []  # the template's keys with their local values (front door up)
        self.signers: list[IamSigner] = []  # auth=iam: each mapped role with credentials made for it
        self.moto = MotoServer(port=self.settings.moto_port)
        self.provisioned: prov.Provisioned | None = None
        self.pools: dict[str, FunctionPool] = {}
        self.sources: list[SqsEventSource] = []
        self.schedulers: list[Scheduler] = []
        self.alerts: AlertCollector | None = None
        self.durable: DurableFunctions | None = None
        self.front_door: FrontDoor | None = None
        self.watcher: CodeWatcher | None = None
        self._batches: deque[dict[str, Any]] = deque(maxlen=5000)
        self._batch_count = 0

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> LocalRuntime:
        started = time.monotonic()
        try:
            ensure_port_free(self.settings.host, self.settings.port)  # before the slow part of the start
            self._start()
        except BaseException:
            self.stop()
            raise
        self._write_state()
        self.console.say(self.banner(time.monotonic() - started))
        return self

    def _start(self) -> None:
        template = self.settings.template
        if template is None:
            self.console.say("synthesizing the stack...")
            template = local_template(self.settings.context)
        template = patched_template(template, self.settings)
        self.moto.start()
        session = self.moto.session()
        self.provisioned = provisioned = prov.provision(template, session=session, endpoint_url=self.moto.url)
        for function in provisioned.functions.values():
            sender = function.environment.get(config.ENV_SENDER_EMAIL)
            if sender:
                prov.verify_email_identity(self.moto.client, sender)
        fill_secrets(template, provisioned, self.moto.client, self.console.say, self.settings.secrets_file)
        if any(f.durable_timeout_seconds is not None for f in provisioned.functions.values()):
            # Before the pools: every function process gets its endpoint as Lambda's.
            self.durable = DurableFunctions(
                provisioned, lambda function, event: self.pools[function].invoke(event), self.settings.host
            )
        self._start_pools(provisioned)
        if self.durable is not None:
            self.durable.start()
        self.alerts = AlertCollector(
            self.moto.client("sqs"),
            self.moto.client("sns"),
            [r.ref for r in provisioned.of_type("AWS::SNS::Topic")],
            self.console,
        )
        self.alerts.start()
        for mapping in provisioned.event_source_mappings:
            source = SqsEventSource(
                mapping,
                self._short(mapping.function),
                self.moto.client("sqs"),
                self.pools[mapping.function].invoke,
                provisioned.region,
                on_batch=self._record_batch,
            )
            source.start()
            self.sources.append(source)
        for schedule in provisioned.schedules:
            if schedule.enabled:
                name = self._short(schedule.function)
                scheduler = Scheduler(
                    schedule,
                    self.pools[schedule.function].invoke,
                    provisioned.account,
                    provisioned.region,
                    every_seconds=self.settings.schedule_seconds,
                    on_result=functools.partial(self._report, name),
                )
                scheduler.start()
                self.schedulers.append(scheduler)
        if provisioned.apis:
            self.front_door = self._front_door(provisioned, provisioned.apis[0])
            self.front_door.start()
        if self.settings.reload:
            roots = [
                REPO_ROOT / "lambdas",
                *map(Path, job_package_paths(self.settings.context, parents=False)),
            ]
            self.watcher = CodeWatcher(roots, self._reload)
            self.watcher.start()

    def _reload(self, changed: list[str]) -> None:
        for pool in self.pools.values():
            pool.recycle()
        names = ", ".join(Path(path).name for path in changed[:3]) + (" ..." if len(changed) > 3 else "")
        self.console.say(
            f"{time.strftime('%H:%M:%S')}  code changed ({names}): the functions start again on it; "
            "jobs, queues and keys are kept"
        )

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        if self.front_door is not None:
            self.front_door.stop()
        for scheduler in self.schedulers:
            scheduler.stop()
        for source in self.sources:
            source.request_stop()
        for pool in self.pools.values():
            pool.close()  # ends invocations in progress, so the pollers can return
        if self.durable is not None:
            self.durable.stop()
        for source in self.sources:
            source.stop()
        if self.alerts is not None:
            self.alerts.stop()
        self.moto.stop()
        if self.settings.state_file is not None:
            remove_state(self.settings.state_file)

    # -- pieces ---------------------------------------------------------------------------------

    def _short(self, function_logical_id: str) -> str:
        assert self.provisioned is not None
        return self.provisioned.display_name(function_logical_id)

    def function_environment(self, function: prov.FunctionSpec) -> dict[str, str]:
        env = {
            **function.environment,
            **self.moto.environment(),
            **LOCAL_FUNCTION_ENV,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *job_package_paths(self.settings.context)]),
        }
        if self.durable is not None:  # Lambda's Invoke and durable execution API (local_runtime/durable.py)
            env["AWS_ENDPOINT_URL_LAMBDA"] = self.durable.url
        if self.settings.extra_modules:
            env[EXTRA_MODULES_ENV] = ",".join(self.settings.extra_modules)
        return {**env, **self.settings.env_overrides}

    def _start_pools(self, provisioned: prov.Provisioned) -> None:
        environments: dict[str, int] = {}
        for mapping in provisioned.event_source_mappings:
            environments[mapping.function] = environments.get(mapping.function, 0) + (
                mapping.maximum_concurrency or DEFAULT_CONCURRENCY
            )
        for schedule in provisioned.schedules:
            environments[schedule.function] = environments.get(schedule.function, 0) + 1
        for api in provisioned.apis:
            for route in api.routes:
                environments.setdefault(route.function, API_ENVIRONMENTS)
        for function in self.durable.functions() if self.durable else []:
            environments[function.logical_id] = DURABLE_ENVIRONMENTS
        for logical_id, function in provisioned.functions.items():
            if logical_id not in environments:
                continue  # nothing invokes it locally
            limit = environments[logical_id]
            name = provisioned.display_name(logical_id)
            self.pools[logical_id] = FunctionPool(
                FunctionConfig(
                    name=function.name,
                    handler=function.handler,
                    timeout_seconds=function.timeout_seconds,
                    memory_mb=function.memory_mb,
                    environment=self.function_environment(function),
                    account=provisioned.account,
                ),
                max_environments=limit,
                log_sink=functools.partial(self._function_line, name),
            )

    def _function_line(self, short_name: str, _function_name: str, line: str) -> None:
        self.console.function_line(short_name, line)

    def _front_door(self, provisioned: prov.Provisioned, api: prov.ApiSpec) -> FrontDoor:
        # The api function's own mapping of IAM callers (auth=iam) says which roles get credentials.
        mapping = provisioned.functions[api.routes[0].function].environment.get(config.ENV_IAM_CALLERS)
        if mapping is not None:
            self.signers = signers_for(IamCallers.model_validate_json(mapping))
        else:
            self.keys = local_keys(provisioned.api_keys, self.api_key)
        gateway = Gateway(
            api,
            self.keys,
            invoke=lambda function, event: self.pools[function].invoke(event),
            account=provisioned.account,
            region=provisioned.region,
            host=self.settings.host,
            signatures=SignatureCheck([signer.credentials for signer in self.signers], provisioned.region),
            operator_roles=frozenset(
                s.credentials.role_arn for s in self.signers if s.role == KeyRole.OPERATOR
            ),
        )
        return FrontDoor(
            gateway,
            {
                "/_local/logs": self._logs,
                "/_local/alerts": lambda _query: self.alerts.alerts() if self.alerts else [],
                "/_local/batches": self._batches_after,
                "/_local/stats": lambda _query: self.stats(),
            },
            host=self.settings.host,
            port=self.settings.port,
        )

    def _record_batch(self, outcome: BatchOutcome) -> None:
        self._batch_count += 1
        self._batches.append({"seq": self._batch_count, **outcome.as_dict()})
        if not outcome.invocation.ok:
            kept = len(outcome.message_ids)
            self._report(outcome.function, outcome.invocation, f"; its {kept} message(s) come back later")

    def _report(self, function: str, invocation: Invocation, consequence: str = "") -> None:
        if invocation.ok:
            return
        self.console.say(
            f"{time.strftime('%H:%M:%S')}  {function} invocation failed: "
            f"{invocation.error_type}: {invocation.error_message}{consequence}"
        )

    def _logs(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        after = int(query.get("after", ["0"])[-1])
        event = query.get("event", [None])[-1]
        return self.console.entries(after, event)

    def _batches_after(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        after = int(query.get("after", ["0"])[-1])
        return [b for b in self._batches if b["seq"] > after]

    def stats(self) -> dict[str, Any]:
        return {
            "functions": {
                (self.provisioned.display_name(logical_id) if self.provisioned else pool.config.name): {
                    "invocations": pool.invocations,
                    "coldStarts": pool.cold_starts,
                    "timeouts": pool.timeouts,
                }
                for logical_id, pool in self.pools.items()
            },
            "awsEndpoint": self.moto.url,
            "region": self.moto.region,
            # The stack's outputs as created here; the API is the front door, not execute-api.
            "outputs": {
                **(self.provisioned.outputs if self.provisioned else {}),
                **({"ApiUrl": self.url} if self.front_door else {}),
            },
        }

    # -- what the user sees ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self.front_door is not None
        return self.front_door.url

    def _write_state(self) -> None:
        state = self.settings.state_file
        if state is None or self.front_door is None:
            return
        keys = [{"name": key.name, "role": key.role, "id": key.id, "value": key.value} for key in self.keys]
        document: dict[str, Any] = {"url": self.url, "keys": keys, "awsEndpoint": self.moto.url}
        if self.signers:
            document |= {"region": self.moto.region, "iam": [signer.as_state() for signer in self.signers]}
        else:
            document["apiKey"] = self.api_key
        if not write_state(state, document):
            self.console.say(
                f"note: another live runtime owns {state}; reach this one with "
                f"`offload --url {self.url} --api-key {self.api_key} ...`"
            )

    def banner(self, elapsed: float) -> str:
        if self.front_door is None:
            return "offload local runtime is up (no API in the template)"
        if self.signers:
            return iam_banner(self.url, self.signers, self.moto.region, self.moto.url, elapsed)
        return startup_banner(self.url, self.keys, self.moto.url, elapsed)
