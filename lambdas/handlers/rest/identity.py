"""Who sent a request, from what API Gateway checked (its API key, or in IAM mode its signature): a
client or the operator.

API Gateway hands the function the key's value twice (the `x-api-key` header and
`requestContext.identity.apiKey`) and its id once (`requestContext.identity.apiKeyId`). Only the id is
used: it is the owner recorded on a job. The value leaves the event before anything can write it out
(the resolver prints whole events when POWERTOOLS_DEV is set, the logger when asked to log events);
so does a signed request's session token, and both are redacted from the process's log lines.

In IAM mode the caller is the mapped role of `requestContext.identity.userArn`, the principal whose
signature API Gateway verified; a principal no mapping names is refused (403), whatever headers it sent.
"""

from typing import Any

from lambdas.lifecycle.errors import ForbiddenError
from lambdas.models.caller import Caller
from lambdas.models.iam import IamCallers
from lambdas.redaction import remember

API_KEY_HEADER = "x-api-key"
SESSION_TOKEN_HEADER = "x-amz-security-token"  # noqa: S105 (a header's name, not a token)
_CREDENTIAL_HEADERS = frozenset({API_KEY_HEADER, SESSION_TOKEN_HEADER})


def without_key_value(event: dict[str, Any]) -> dict[str, Any]:
    """A copy of the event without the key's value; the event itself is left as it was."""
    cleaned = dict(event)
    for section in ("headers", "multiValueHeaders"):
        headers = event.get(section)
        if isinstance(headers, dict):
            # Anything this process logs from now on is redacted of them too (a key pasted in a payload).
            for name, value in headers.items():
                if name.lower() in _CREDENTIAL_HEADERS:
                    remember(*(value if isinstance(value, list) else [value]))
            cleaned[section] = {
                name: v for name, v in headers.items() if name.lower() not in _CREDENTIAL_HEADERS
            }
    context = event.get("requestContext")
    identity = context.get("identity") if isinstance(context, dict) else None
    if isinstance(context, dict) and isinstance(identity, dict):
        identity = {name: value for name, value in identity.items() if name != "apiKey"}
        cleaned["requestContext"] = {**context, "identity": identity}
    return cleaned


def caller_of(api_key_id: str | None, operator_key_id: str) -> Caller:
    """The caller a request's API key id names. API Gateway answers 403 itself to a request without a
    key, so an empty id never arrives from AWS; it would be a client that owns nothing, not the operator."""
    key_id = api_key_id or ""
    return Caller(owner=key_id, operator=bool(key_id) and key_id == operator_key_id)


def iam_caller_of(user_arn: str | None, callers: IamCallers) -> Caller:
    """The mapped caller of a signed request's principal. The stack's resource policy already refuses
    unmapped roles at API Gateway; this refuses them again, so the mapping decides even if that policy
    is loosened."""
    found = callers.caller(user_arn)
    if found is None:
        raise ForbiddenError("the signing principal is not one of offload's IAM callers")
    return found
