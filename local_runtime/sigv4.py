"""API Gateway's AWS_IAM authorization, locally: SigV4 signatures checked against credentials the runtime
made for each mapped role, and the API's resource policy applied to the signer.

Rules, each answered with the 403 API Gateway gives (response type, message):
- no `Authorization` header: MISSING_AUTHENTICATION_TOKEN, "Missing Authentication Token";
- an Authorization that is not `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...`, or
  whose signed headers leave out `host` or `x-amz-date`: INVALID_SIGNATURE;
- an access key the runtime did not make, or a session token that is missing or not the key's:
  INVALID_SIGNATURE, "The security token included in the request is invalid.";
- an `x-amz-date` more than CLOCK_SKEW from now (API Gateway's five minutes, either way), or a credential
  scope whose date, region, service (`execute-api`) or terminator does not match: INVALID_SIGNATURE;
- a signature other than the one recomputed from the request as received (method, path, query, the
  signed headers' values, the body's SHA-256) with the key's secret: INVALID_SIGNATURE; the two are
  compared in constant time;
- a signer the resource policy does not allow (`ResourcePolicy`): ACCESS_DENIED, naming the session.

The canonical request is botocore's (the same code AWS's SDKs sign with), given the request exactly as
it arrived: the path and query string as sent, not re-encoded.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import re
import secrets
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from lambdas import config
from lambdas.config import KeyRole
from lambdas.models.iam import IamCallers, role_of
from local_runtime.template import UnsupportedTemplateError

SERVICE = "execute-api"
ALGORITHM = "AWS4-HMAC-SHA256"
CLOCK_SKEW = timedelta(minutes=5)
SESSION_NAME = "offload-local"
_TIMESTAMP = "%Y%m%dT%H%M%SZ"
_AUTHORIZATION = re.compile(
    rf"{ALGORITHM} Credential=(?P<credential>[^,\s]+),\s*SignedHeaders=(?P<signed>[^,\s]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})"
)
_INVALID_TOKEN = "The security token included in the request is invalid."  # noqa: S105 (a message)
_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)


@dataclass(frozen=True)
class RoleCredentials:
    """Temporary credentials of one session of a role, as STS AssumeRole would hand them out."""

    role_arn: str
    access_key_id: str
    secret_access_key: str
    session_token: str
    role_id: str

    @classmethod
    def made_for(cls, role_arn: str) -> RoleCredentials:
        return cls(
            role_arn=role_arn,
            access_key_id="ASIA" + _upper(16),
            secret_access_key=secrets.token_urlsafe(30),
            session_token=secrets.token_urlsafe(48),
            role_id="AROA" + _upper(17),
        )

    @property
    def session_arn(self) -> str:
        """What API Gateway reports as the caller's `userArn`: the role's session, without its path."""
        found = role_of(self.role_arn)
        assert found is not None, self.role_arn
        partition, account, name = found
        return f"arn:{partition}:sts::{account}:assumed-role/{name}/{SESSION_NAME}"

    @property
    def account(self) -> str:
        found = role_of(self.role_arn)
        assert found is not None
        return found[1]

    def identity(self) -> dict[str, str]:
        """The fields of `requestContext.identity` API Gateway fills for a request this session signed."""
        return {
            "accountId": self.account,
            "caller": f"{self.role_id}:{SESSION_NAME}",
            "user": f"{self.role_id}:{SESSION_NAME}",
            "userArn": self.session_arn,
            "accessKey": self.access_key_id,
        }


@dataclass(frozen=True)
class IamSigner:
    """A mapped role with the credentials the runtime made for it: what `make run -c auth=iam` prints."""

    name: str  # the client's name, or `operator`
    role: str  # a lambdas.config.KeyRole value
    credentials: RoleCredentials

    def as_state(self) -> dict[str, str]:
        return {
            "name": self.name,
            "role": self.role,
            "roleArn": self.credentials.role_arn,
            "userArn": self.credentials.session_arn,
            "accessKeyId": self.credentials.access_key_id,
            "secretAccessKey": self.credentials.secret_access_key,
            "sessionToken": self.credentials.session_token,
        }


def signers_for(callers: IamCallers) -> list[IamSigner]:
    """Fresh credentials for every mapped role: the clients', then the operators'."""
    return [
        *(
            IamSigner(name, KeyRole.CLIENT, RoleCredentials.made_for(arn))
            for name, arn in callers.clients.items()
        ),
        *(
            IamSigner(config.OPERATOR_KEY_NAME, KeyRole.OPERATOR, RoleCredentials.made_for(arn))
            for arn in callers.operators
        ),
    ]


@dataclass(frozen=True)
class Refusal:
    response_type: str
    message: str


@dataclass(frozen=True)
class SignedRequest:
    method: str
    target: str  # the request-target as sent: path and query, not decoded
    headers: Sequence[tuple[str, str]]
    body: bytes


class SignatureCheck:
    def __init__(
        self,
        credentials: Sequence[RoleCredentials],
        region: str,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._by_key = {c.access_key_id: c for c in credentials}
        self._region = region
        self._now = now

    @property
    def has_credentials(self) -> bool:
        return bool(self._by_key)

    def verify(self, request: SignedRequest) -> RoleCredentials | Refusal:
        """The session that signed the request, or why API Gateway would refuse it."""
        authorization = _header(request.headers, "authorization")
        if authorization is None:
            return Refusal("MISSING_AUTHENTICATION_TOKEN", "Missing Authentication Token")
        parsed = _AUTHORIZATION.fullmatch(authorization.strip())
        if parsed is None:
            return Refusal(
                "INVALID_SIGNATURE",
                f"Authorization header requires {ALGORITHM} with 'Credential', 'SignedHeaders' and "
                "'Signature' parameters.",
            )
        key, _, scope = parsed["credential"].partition("/")
        signer = self._by_key.get(key)
        token = _header(request.headers, "x-amz-security-token")
        if signer is None or token is None or not hmac.compare_digest(token, signer.session_token):
            return Refusal("INVALID_SIGNATURE", _INVALID_TOKEN)
        signed = parsed["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            return Refusal("INVALID_SIGNATURE", "'Host' and 'X-Amz-Date' must be signed headers.")
        stale = self._stale(_header(request.headers, "x-amz-date"), scope)
        if stale is not None:
            return stale
        expected = self._signature(request, signer, signed, _header(request.headers, "x-amz-date") or "")
        if expected is None or not hmac.compare_digest(expected, parsed["signature"]):
            return Refusal("INVALID_SIGNATURE", _MISMATCH)
        return signer

    def _stale(self, stamp: str | None, scope: str) -> Refusal | None:
        try:
            sent = datetime.strptime(stamp or "", _TIMESTAMP).replace(tzinfo=UTC)
        except ValueError:
            return Refusal("INVALID_SIGNATURE", "X-Amz-Date must be a timestamp YYYYMMDD'T'HHMMSS'Z'.")
        now = self._now().replace(microsecond=0)
        if sent < now - CLOCK_SKEW:
            return Refusal(
                "INVALID_SIGNATURE",
                f"Signature expired: {stamp} is now earlier than {(now - CLOCK_SKEW).strftime(_TIMESTAMP)} "
                f"({now.strftime(_TIMESTAMP)} - 5 min.)",
            )
        if sent > now + CLOCK_SKEW:
            return Refusal(
                "INVALID_SIGNATURE",
                f"Signature not yet current: {stamp} is still later than "
                f"{(now + CLOCK_SKEW).strftime(_TIMESTAMP)} ({now.strftime(_TIMESTAMP)} + 5 min.)",
            )
        expected_scope = f"{sent:%Y%m%d}/{self._region}/{SERVICE}/aws4_request"
        if scope != expected_scope:
            return Refusal("INVALID_SIGNATURE", f"Credential should be scoped to {expected_scope}.")
        return None

    def _signature(
        self, request: SignedRequest, signer: RoleCredentials, signed: list[str], stamp: str
    ) -> str | None:
        body_hash = hashlib.sha256(request.body).hexdigest()
        claimed = _header(request.headers, "x-amz-content-sha256")
        if claimed is not None and claimed != body_hash:
            return None  # a body other than the one the signature claims
        host = _header(request.headers, "host") or ""
        aws_request = AWSRequest(
            method=request.method, url=f"http://{host}{request.target}", data=request.body
        )
        for name in signed:
            values = [value for n, value in request.headers if n.lower() == name]
            if not values:
                return None  # a signed header that did not arrive
            for value in values:
                aws_request.headers.add_header(name, value)
        aws_request.context["timestamp"] = stamp
        signer_v4 = SigV4Auth(
            Credentials(signer.access_key_id, signer.secret_access_key, signer.session_token),
            SERVICE,
            self._region,
        )
        canonical = signer_v4.canonical_request(aws_request)
        return str(signer_v4.signature(signer_v4.string_to_sign(aws_request, canonical), aws_request))


class ResourcePolicy:
    """The statements of an API's resource policy that the stack writes, evaluated as IAM does for a
    signed request to the API's own account: an explicit deny wins, then an allow; nothing, no entry.

    Understood: Effect Allow/Deny, Action execute-api:Invoke, Principal {"AWS": "*" or role ARNs},
    Resource `execute-api:/<stage>/<METHOD>/<path>` patterns, and Condition StringNotEquals on
    aws:PrincipalArn. Anything else is UnsupportedTemplateError."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._statements = [_statement(s) for s in document.get("Statement", [])]

    def allows(self, principal_arn: str | None, method: str, path: str, stage: str) -> bool:
        resource = f"execute-api:/{stage}/{method}/{path.strip('/')}"
        verdicts = [s.effect for s in self._statements if s.applies(principal_arn, resource)]
        return "Deny" not in verdicts and "Allow" in verdicts


@dataclass(frozen=True)
class _Statement:
    effect: str
    principals: tuple[str, ...] | None  # None: anyone
    resources: tuple[str, ...]
    not_principal_arns: tuple[str, ...] | None

    def applies(self, principal_arn: str | None, resource: str) -> bool:
        if not any(fnmatch.fnmatchcase(resource, pattern) for pattern in self.resources):
            return False
        if self.principals is not None and principal_arn not in self.principals:
            return False
        return self.not_principal_arns is None or principal_arn not in self.not_principal_arns


def _statement(raw: Mapping[str, Any]) -> _Statement:
    unknown = set(raw) - {"Effect", "Action", "Principal", "Resource", "Condition"}
    principal = raw.get("Principal", {}).get("AWS") if isinstance(raw.get("Principal"), dict) else None
    condition = raw.get("Condition")
    if unknown or raw.get("Action") != "execute-api:Invoke" or principal is None:
        raise UnsupportedTemplateError(f"a resource policy statement the local runtime cannot apply: {raw}")
    not_arns = None
    if condition is not None:
        if set(condition) != {"StringNotEquals"} or set(condition["StringNotEquals"]) != {"aws:PrincipalArn"}:
            raise UnsupportedTemplateError(f"a resource policy condition not supported locally: {condition}")
        not_arns = tuple(_as_list(condition["StringNotEquals"]["aws:PrincipalArn"]))
    return _Statement(
        effect=str(raw["Effect"]),
        principals=None if principal == "*" else tuple(_as_list(principal)),
        resources=tuple(_as_list(raw["Resource"])),
        not_principal_arns=not_arns,
    )


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    values = [value for n, value in headers if n.lower() == name]
    return values[-1] if values else None


def _upper(length: int) -> str:
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(length))
