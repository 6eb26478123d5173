"""Who sent a request, from the API key API Gateway checked: a client or the operator.

API Gateway hands the function the key's value twice (the `x-api-key` header and
`requestContext.identity.apiKey`) and its id once (`requestContext.identity.apiKeyId`). Only the id is
used: it is the owner recorded on a job. The value leaves the event before anything can write it out
(the resolver prints whole events when POWERTOOLS_DEV is set, the logger when asked to log events).
"""

from typing import Any

from lambdas.models.caller import Caller

API_KEY_HEADER = "x-api-key"


def without_key_value(event: dict[str, Any]) -> dict[str, Any]:
    """A copy of the event without the key's value; the event itself is left as it was."""
    cleaned = dict(event)
    for section in ("headers", "multiValueHeaders"):
        headers = event.get(section)
        if isinstance(headers, dict):
            cleaned[section] = {name: v for name, v in headers.items() if name.lower() != API_KEY_HEADER}
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
