"""Reading a request: every body this API takes is JSON, bounded in bytes and in nesting depth.

The bounds are checked here, before any model sees the body, so that nothing later can fail on it:
`json.loads` raises RecursionError (not ValueError) on deep nesting, pydantic refuses to serialise
past its own depth, and a lone surrogate (`"\\ud800"`, valid JSON text) cannot be encoded as UTF-8.
NaN and Infinity (Python's JSON extensions, or a number like 1e999 too large for a float) are refused:
JSON has no such values, so they would come back as null, not as what the client sent.
"""

import json
import math
import re
from typing import Any

from lambdas import config
from lambdas.handlers.rest.errors import BodyTooLargeError, MalformedBodyError, NestingTooDeepError

# Only a body that escapes a surrogate can hold a lone one: JSON text itself is read as valid Unicode.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def read_json_body(body: str) -> Any:
    """The json_body_deserializer of the api's resolver."""
    if len(body.encode(errors="surrogatepass")) > config.MAX_BODY_BYTES:
        raise BodyTooLargeError()
    try:
        value = json.loads(body, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise NestingTooDeepError() from None
    except MalformedBodyError:
        raise
    except ValueError as error:
        raise MalformedBodyError(f"the request body is not valid JSON: {error}") from None
    if _deeper_than(value, config.MAX_JSON_DEPTH):
        raise NestingTooDeepError()
    if _ESCAPED_SURROGATE.search(body) and not _encodable(value):
        raise MalformedBodyError("the request body holds a lone UTF-16 surrogate, which is not text")
    return value


def _not_a_number(name: str) -> float:
    raise MalformedBodyError(f"the request body holds {name}, which JSON has no value for")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise MalformedBodyError(f"the request body holds {text[:40]}, a number too large for a float")
    return number


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than `limit` levels; level by level, so without recursion."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(limit):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return bool(level)


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def as_json_request(event: dict[str, Any]) -> dict[str, Any]:
    """Every body this API takes is JSON, whatever Content-Type the client sent (curl's -d says form).

    Even without a body: Powertools refuses a content type it does not know before it looks for one.
    """
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = "application/json"
    multi["Content-Type"] = ["application/json"]
    return {**event, "headers": headers, "multiValueHeaders": multi}
