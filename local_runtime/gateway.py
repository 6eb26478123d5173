"""API Gateway's REST API in front of the `api` function, without sockets (`front_door` serves it).

Each request becomes the proxy event a Lambda proxy integration receives (resource, path parameters,
query string, single and multi-value headers, base64 bodies for binary media types, requestContext with
the caller's API key); the function's answer becomes the HTTP response. Like a usage plan, a method
that requires an API key answers 403 without a valid `x-api-key`, and the plan's rate and burst limits
answer 429. An AWS_IAM method (auth=iam) answers 403 to a request whose SigV4 signature does not
verify (`sigv4.SignatureCheck`), or whose signer the API's resource policy does not allow; a verified
signer is the request context's identity (userArn, caller, user, accountId, accessKey). Unknown paths and methods answer as API Gateway does (403 "Missing Authentication Token",
or the stack's gateway response for it).
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from lambdas.config import KeyRole
from local_runtime.lambda_pool import Invocation
from local_runtime.sigv4 import Refusal, ResourcePolicy, RoleCredentials, SignatureCheck, SignedRequest
from local_runtime.template import ApiSpec, Route, UsagePlanLimits

API_KEY_HEADER = "x-api-key"


@dataclass(frozen=True)
class ApiKey:
    id: str  # API Gateway's key id: the function sees it in requestContext.identity.apiKeyId
    value: str  # what a client sends as x-api-key
    name: str = "default"
    role: str = "client"  # a lambdas.config.KeyRole value


class _TokenBucket:
    """A usage plan's throttle: `rate` requests per second on average, up to `burst` at once."""

    def __init__(self, limits: UsagePlanLimits) -> None:
        self.rate = limits.rate_limit
        self.capacity = float(limits.burst_limit or limits.rate_limit or 0)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        if not self.rate:
            return True
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
            if self.tokens < 1:
                return False
            self.tokens -= 1
            return True


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str  # without the stage
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str
    target: str = ""  # the request-target as sent (with the stage), which a signature covers


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    @classmethod
    def json(cls, status: int, document: Any) -> HttpResponse:
        return cls(status, [("Content-Type", "application/json")], json.dumps(document).encode())


def _route_pattern(resource: str) -> re.Pattern[str]:
    parts = []
    for segment in resource.strip("/").split("/"):
        if segment.startswith("{") and segment.endswith("+}"):
            parts.append(f"(?P<{segment[1:-2]}>.+)")
        elif segment.startswith("{") and segment.endswith("}"):
            parts.append(f"(?P<{segment[1:-1]}>[^/]+)")
        else:
            parts.append(re.escape(segment))
    return re.compile("^/" + "/".join(parts) + "$")


def _specificity(route: Route) -> tuple[int, int]:
    # API Gateway prefers literal path parts over variables, and variables over greedy ones.
    return (route.resource.count("+}"), route.resource.count("{"))


def grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


class Gateway:
    """The routing, key checks and event mapping of one REST API stage (no sockets: testable as is)."""

    def __init__(
        self,
        api: ApiSpec,
        keys: list[ApiKey],
        invoke: Callable[[str, dict[str, Any]], Invocation],
        account: str,
        region: str,
        host: str = "127.0.0.1",
        signatures: SignatureCheck | None = None,
        operator_roles: frozenset[str] = frozenset(),
    ) -> None:
        """`operator_roles`: with auth=iam, the role ARNs mapped as the operator (iamOperators)."""
        self.api = api
        self._signatures = signatures or SignatureCheck([], region)
        self._operator_roles = operator_roles
        self._policy = ResourcePolicy(api.policy) if api.policy is not None else None
        self._keys = {key.value: key for key in keys}
        self._invoke = invoke
        self._account = account
        self._region = region
        self._host = host
        self._routes = [(_route_pattern(r.resource), r) for r in sorted(api.routes, key=_specificity)]
        self._buckets = {key.value: _TokenBucket(api.limits) for key in keys}

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for this request. As in API Gateway, the path picks the resource first (the most
        specific one: `/jobs/retry` over `/jobs/{jobId}`), then the method; a method that resource
        lacks does not fall back to a less specific resource."""
        resource = None
        for pattern, route in self._routes:
            found = pattern.match(path)
            if found and resource in (None, route.resource):
                resource = route.resource
                if route.method in (method, "ANY"):
                    return route, found.groupdict()
        return None

    def handle(self, request: HttpRequest) -> HttpResponse:
        request_id = str(uuid.uuid4())
        matched = self.match(request.method, request.path)
        if matched is None:
            return self.error("MISSING_AUTHENTICATION_TOKEN", 403, "Missing Authentication Token", request_id)
        route, path_parameters = matched
        signer = None
        if route.authorization == "AWS_IAM":
            verified = self.signer_of(request)
            if isinstance(verified, Refusal):
                return self.error(verified.response_type, 403, verified.message, request_id)
            signer = verified
        if self._policy is not None and not self._policy.allows(
            signer.role_arn if signer else None, request.method, request.path, self.api.stage
        ):
            return self.error("ACCESS_DENIED", 403, self._denied(signer, request), request_id)
        key = self.key_for(request.headers)
        if route.api_key_required:
            if key is None:
                return self.error("INVALID_API_KEY", 403, "Forbidden", request_id)
            if not self._buckets[key.value].take():
                return self.error("THROTTLED", 429, "Too Many Requests", request_id)
        event = self.event(request, route, path_parameters, key, request_id, signer)
        invocation = self._invoke(route.function, event)
        response = self._response(invocation)
        if response is None:
            return self.error("DEFAULT_5XX", 502, "Internal server error", request_id)
        return self._answer(request_id, response)

    def error(self, response_type: str, status: int, message: str, request_id: str) -> HttpResponse:
        """An error API Gateway answers itself, shaped by the stack's gateway responses when it has them."""
        family = "DEFAULT_4XX" if status < 500 else "DEFAULT_5XX"
        custom = self.api.gateway_responses.get(response_type) or self.api.gateway_responses.get(family)
        if custom is None:
            return self._answer(request_id, HttpResponse.json(status, {"message": message}))
        content_type, template = next(iter(custom.templates.items()), ("application/json", None))
        body = (
            json.dumps({"message": message}) if template is None else _render(template, message, request_id)
        )
        headers = [("Content-Type", content_type), *custom.headers.items()]
        return self._answer(request_id, HttpResponse(custom.status or status, headers, body.encode()))

    def signer_of(self, request: HttpRequest) -> RoleCredentials | Refusal:
        query = f"?{urlencode(request.query)}" if request.query else ""
        target = request.target or f"/{self.api.stage}{request.path}{query}"
        return self._signatures.verify(SignedRequest(request.method, target, request.headers, request.body))

    def _denied(self, signer: RoleCredentials | None, request: HttpRequest) -> str:
        resource = (
            f"arn:aws:execute-api:{self._region}:{self._account}:{self.api.api_id}/{self.api.stage}/"
            f"{request.method}{request.path}"
        )
        who = signer.session_arn if signer else "anonymous"
        return f"User: {who} is not authorized to perform: execute-api:Invoke on resource: {resource} with an explicit deny"

    def may_use_local(self, request: HttpRequest) -> bool:
        """The runtime's own endpoints show every client's jobs and moto's endpoint: the operator's key,
        or a verified signature of a role mapped as the operator, and no client's."""
        key = self.key_for(request.headers)
        if key is not None:
            return key.role == KeyRole.OPERATOR
        if not self._signatures.has_credentials:
            return False
        signer = self.signer_of(request)
        return not isinstance(signer, Refusal) and signer.role_arn in self._operator_roles

    def key_for(self, headers: list[tuple[str, str]]) -> ApiKey | None:
        values = [v for name, v in headers if name.lower() == API_KEY_HEADER]
        return self._keys.get(values[-1]) if values else None

    def event(
        self,
        request: HttpRequest,
        route: Route,
        path_parameters: Mapping[str, str],
        key: ApiKey | None,
        request_id: str,
        signer: RoleCredentials | None = None,
    ) -> dict[str, Any]:
        """The event a Lambda proxy integration of a REST API receives for this request."""
        headers = grouped(request.headers)
        query = grouped(request.query)
        content_type = next((v for n, v in request.headers if n.lower() == "content-type"), "")
        binary = any(
            fnmatch.fnmatch(content_type.split(";")[0].strip(), t) for t in self.api.binary_media_types
        )
        body: str | None
        if not request.body:
            body = None
        elif binary:
            body = base64.b64encode(request.body).decode()
        else:
            body = request.body.decode("utf-8", errors="replace")
        return {
            "resource": route.resource,
            "path": request.path,
            "httpMethod": request.method,
            "headers": {name: values[-1] for name, values in headers.items()} or None,
            "multiValueHeaders": headers or None,
            "queryStringParameters": {name: values[-1] for name, values in query.items()} or None,
            "multiValueQueryStringParameters": query or None,
            "pathParameters": dict(path_parameters) or None,
            "stageVariables": None,
            "requestContext": self._request_context(request, route, key, request_id, signer),
            "body": body,
            "isBase64Encoded": binary and body is not None,
        }

    def _request_context(
        self,
        request: HttpRequest,
        route: Route,
        key: ApiKey | None,
        request_id: str,
        signer: RoleCredentials | None = None,
    ) -> dict[str, Any]:
        now = datetime.now(UTC)
        user_agent = next((v for n, v in request.headers if n.lower() == "user-agent"), None)
        return {
            "resourceId": re.sub(r"[^a-z0-9]", "", route.resource.lower())[:6] or "root",
            "resourcePath": route.resource,
            "httpMethod": request.method,
            "extendedRequestId": base64.b64encode(uuid.uuid4().bytes[:12]).decode(),
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "path": f"/{self.api.stage}{request.path}",
            "accountId": self._account,
            "protocol": "HTTP/1.1",
            "stage": self.api.stage,
            "domainPrefix": self.api.api_id,
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "requestId": request_id,
            "identity": {
                "cognitoIdentityPoolId": None,
                "accountId": None,
                "cognitoIdentityId": None,
                "caller": None,
                "sourceIp": request.source_ip,
                "principalOrgId": None,
                "accessKey": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "userArn": None,
                "userAgent": user_agent,
                "user": None,
                "apiKey": key.value if key else None,
                "apiKeyId": key.id if key else None,
                **(signer.identity() if signer else {}),
            },
            "domainName": self._host,
            "apiId": self.api.api_id,
        }

    @staticmethod
    def _response(invocation: Invocation) -> HttpResponse | None:
        """The function's proxy response; None (a 502) for an error or a response of the wrong shape."""
        bad_gateway = None
        result = invocation.result
        if not invocation.ok or not isinstance(result, dict) or not isinstance(result.get("statusCode"), int):
            return bad_gateway
        headers: list[tuple[str, str]] = [(k, str(v)) for k, v in (result.get("headers") or {}).items()]
        single = {k.lower() for k, _ in headers}
        for name, values in (result.get("multiValueHeaders") or {}).items():
            if name.lower() not in single:
                headers.extend((name, str(v)) for v in values)
        body = result.get("body") or ""
        if not isinstance(body, str):
            return bad_gateway
        raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
        if not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", "application/json"))
        return HttpResponse(result["statusCode"], headers, raw)

    @staticmethod
    def _answer(request_id: str, response: HttpResponse) -> HttpResponse:
        return HttpResponse(
            response.status,
            [*response.headers, ("x-amzn-RequestId", request_id), ("x-amz-apigw-id", request_id[:16])],
            response.body,
        )


def _render(template: str, message: str, request_id: str) -> str:
    """The few `$context` variables of a gateway response template that errors use."""
    return (
        template.replace("$context.error.messageString", json.dumps(message))
        .replace("$context.error.message", message)
        .replace("$context.requestId", request_id)
    )
