"""Where the CLI sends its requests: flags, a deployed stack's outputs file, or the local runtime."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from lambdas import config
from local_runtime.state import STATE_FILE
from offload_cli.errors import CliError, ExitCode

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
OPERATOR = config.OPERATOR_KEY_NAME  # the key (and role) that sees and acts on every job
CLIENT_KEY_OUTPUT = "ApiKeyId"  # the first client's key id; `ApiKeyId<Name>` names each client's
OPERATOR_KEY_OUTPUT = "OperatorKeyId"
T = TypeVar("T")


@dataclass(frozen=True)
class Signer:
    """SigV4 for a stack deployed with IAM callers (auth=iam): botocore's credential chain (environment,
    profile, role), or a local IAM runtime's role session as its state file lists it."""

    region: str | None = None  # None: from the API's URL (execute-api.<region>.amazonaws.com)
    credentials: tuple[str, str, str | None] | None = None  # access key, secret, session token

    def auth(self) -> Any:
        # Imported here: API-key commands never load botocore's signer.
        import botocore.session
        from offload_client.aws import SigV4Auth

        session = botocore.session.get_session()
        if self.credentials is not None:
            session.set_credentials(*self.credentials)
        return SigV4Auth(self.region, session=session)


@dataclass(frozen=True)
class Target:
    url: str  # the API stage's base URL, ending with /
    api_key: str | None  # None when the requests are signed instead
    local: bool
    signer: Signer | None = None
    # The key the local runtime's /_local/ endpoints answer (every client's logs): the operator's, read
    # from the runtime's state; None when unknown (--url), and the target's own key is tried.
    operator_key: str | None = None

    def endpoint(self, path: str) -> str:
        return self.url + path.lstrip("/")

    @property
    def local_base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/_local/"

    def headers(self) -> dict[str, str]:
        return {"content-type": "application/json", **({"x-api-key": self.api_key} if self.api_key else {})}

    def local_headers(self) -> dict[str, str]:
        """For /_local/: the operator's key when known."""
        key = self.operator_key or self.api_key
        return {"x-api-key": key} if key else {}


def resolve_target(args: argparse.Namespace, state_file: Path | None = None) -> Target:
    url = args.url or os.environ.get("OFFLOAD_URL")
    named = getattr(args, "key", None)
    if named and args.api_key:
        raise CliError("give --api-key or --key, not both", ExitCode.USAGE)
    api_key = args.api_key or (None if named else os.environ.get("OFFLOAD_API_KEY"))
    iam = bool(getattr(args, "iam", False)) or os.environ.get("OFFLOAD_AUTH") == config.AuthMode.IAM
    if iam and (api_key or (named and (url or args.outputs_file))):
        raise CliError("--iam signs its requests: give no --api-key or --key with it", ExitCode.USAGE)
    if url:
        if named:
            raise CliError(
                "--key names a key of the local runtime or of --outputs-file: with --url, give --api-key",
                ExitCode.USAGE,
            )
        if not api_key and not iam:
            raise CliError("--url needs --api-key (or OFFLOAD_API_KEY), or --iam", ExitCode.USAGE)
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise CliError(f"--url {url!r} is not an http(s) URL", ExitCode.USAGE)
        # Only the local runtime serves loopback: its /_local/ endpoints are there too.
        local = parts.hostname in LOOPBACK
        return Target(url.rstrip("/") + "/", api_key, local=local, signer=Signer() if iam else None)
    if args.outputs_file:
        path = Path(args.outputs_file)
        outputs = stack_outputs(path, "ApiUrl")
        if iam or not any(name.startswith((CLIENT_KEY_OUTPUT, OPERATOR_KEY_OUTPUT)) for name in outputs):
            # A stack deployed with auth=iam makes no API keys: its callers sign.
            return Target(outputs["ApiUrl"].rstrip("/") + "/", None, local=False, signer=Signer())
        if not api_key:
            api_key = _api_key_value(_key_id(path, outputs, named), outputs["ApiUrl"])
        return Target(outputs["ApiUrl"].rstrip("/") + "/", api_key, local=False)
    state = _local_state(state_file or STATE_FILE)
    if "iam" in state:
        return Target(state["url"], None, local=True, signer=_local_signer(state, named, iam))
    try:
        operator_key: str | None = _local_key(state, OPERATOR)
    except CliError:  # a state file that lists no keys
        operator_key = None
    key = _local_key(state, named) if named else api_key or state["apiKey"]
    return Target(state["url"], key, local=True, operator_key=operator_key)


def key_id_of(args: argparse.Namespace, name: str, state_file: Path | None = None) -> str:
    """The API key id of the key called `name` (of --outputs-file, or of the local runtime when neither
    --url nor --outputs-file is given); anything else is taken as a key id already."""
    if args.outputs_file:
        path = Path(args.outputs_file)
        outputs = stack_outputs(path)
        try:
            return _key_id(path, outputs, name)
        except CliError:
            return name
    if args.url or os.environ.get("OFFLOAD_URL"):
        return name
    keys = _local_state(state_file or STATE_FILE).get("keys") or []
    named = [key for key in keys if isinstance(key, dict) and key.get("name") == name and "id" in key]
    return str(named[0]["id"]) if named else name


def _local_signer(state: dict[str, Any], name: str | None, chain: bool) -> Signer:
    """A local IAM runtime (`make run RUN_ARGS="-c auth=iam"`): with --iam, botocore's chain (the
    credentials exported from its banner); else the role session called `name` that its state lists
    (default: the first client's), as `--key` picks an API key."""
    region = str(state.get("region") or "us-east-1")
    if chain:
        return Signer(region)
    signers = [s for s in state.get("iam") or [] if isinstance(s, dict) and "accessKeyId" in s]
    wanted = [
        s for s in signers if (s.get("name") == name if name else s.get("role") == config.KeyRole.CLIENT)
    ]
    if not wanted:
        known = ", ".join(str(s.get("name")) for s in signers) or "none listed: restart `make run`"
        raise CliError(
            f"the local runtime has no IAM caller named {name!r} (its callers: {known})", ExitCode.USAGE
        )
    found = wanted[0]
    return Signer(region, (found["accessKeyId"], found["secretAccessKey"], found.get("sessionToken")))


def _local_key(state: dict[str, Any], name: str) -> str:
    """The value of the runtime's key called `name`; `operator` also finds the operator's key by its role."""
    keys = [key for key in state.get("keys") or [] if isinstance(key, dict) and "value" in key]
    for key in keys:
        if name in (key.get("name"), key.get("role") if name == OPERATOR else None):
            return str(key["value"])
    known = ", ".join(str(key.get("name")) for key in keys) or "none listed: restart `make run`"
    raise CliError(f"the local runtime has no key named {name!r} (its keys: {known})", ExitCode.USAGE)


def _key_id(path: Path, outputs: dict[str, str], name: str | None) -> str:
    """The id of the stack's key called `name` among its outputs (default: the first client's)."""
    if name is None:
        output = CLIENT_KEY_OUTPUT
    elif name == OPERATOR:
        output = OPERATOR_KEY_OUTPUT
    else:
        # infra.settings.key_suffix's rule (`my-app` -> `MyApp`): importing it would load the CDK
        output = CLIENT_KEY_OUTPUT + "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name))
    if output not in outputs:
        raise CliError(f"{path} has no {output} output (the key's id): give --api-key", ExitCode.USAGE)
    return outputs[output]


def _local_state(state_file: Path) -> dict[str, Any]:
    try:
        state = json.loads(state_file.read_text())
    except FileNotFoundError:
        raise CliError(
            "no local runtime is running (start it with `make run`), and no --url or --outputs-file was given",
            ExitCode.UNREACHABLE,
        ) from None
    except (OSError, ValueError) as error:
        raise CliError(
            f"cannot read {state_file} ({error}): restart `make run`", ExitCode.UNREACHABLE
        ) from None
    # An API-key runtime names its first key; an IAM one (auth=iam) its callers' role sessions.
    if not isinstance(state, dict) or "url" not in state or not ({"apiKey", "iam"} & state.keys()):
        raise CliError(
            f"{state_file} is not the local runtime's state: restart `make run`", ExitCode.UNREACHABLE
        )
    return state


def stack_outputs(path: Path, *required: str) -> dict[str, str]:
    """The stack's outputs from `cdk deploy --outputs-file`, with the ones the command needs."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read the outputs file {path}: {error}", ExitCode.USAGE) from None
    # `cdk deploy --outputs-file` keys the outputs by stack: `Offload`, or `Offload-<stage>`.
    stacks = (
        [v for k, v in document.items() if k == config.STACK_ID or k.startswith(f"{config.STACK_ID}-")]
        if isinstance(document, dict)
        else []
    )
    outputs = stacks[0] if len(stacks) == 1 else document
    missing = [name for name in required if not isinstance(outputs, dict) or name not in outputs]
    if missing or not isinstance(outputs, dict):
        raise CliError(
            f"{path} has no {', '.join(missing)} output of the {config.STACK_ID} stack "
            "(write it with `cdk deploy --outputs-file`, from the current stack)",
            ExitCode.USAGE,
        )
    return outputs


def _api_key_value(api_key_id: str, api_url: str) -> str:
    import boto3

    # https://<id>.execute-api.<region>.amazonaws.com/<stage>/: the key lives in the API's region.
    host = urlsplit(api_url).hostname or ""
    region = host.split(".")[2] if ".execute-api." in host else None
    client = boto3.client("apigateway", region_name=region)
    answer = aws_call(
        "read the API key's value (or give --api-key)",
        lambda: client.get_api_key(apiKey=api_key_id, includeValue=True),
    )
    return str(answer["value"])


def aws_call(what: str, call: Callable[[], T]) -> T:
    """Run one AWS call; its failures become one line with the right exit code."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
    )

    try:
        return call()
    except ClientError as error:
        detail = error.response.get("Error", {})
        raise CliError(
            f"AWS refused to {what}: {detail.get('Code')}: {detail.get('Message')}", ExitCode.REFUSED
        ) from None
    except (EndpointConnectionError, NoCredentialsError, NoRegionError) as error:
        raise CliError(f"cannot {what}: {error}", ExitCode.UNREACHABLE) from None
    except BotoCoreError as error:
        raise CliError(f"cannot {what}: {error}", ExitCode.FAILED) from None
