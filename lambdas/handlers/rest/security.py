"""Headers every answer of the api function carries, data or console page alike.

The console renders job data in the browser, so the policy is strict: scripts, styles, images and
API calls only from the API's own origin, nothing inline, no plug-ins, never framed. JSON answers
carry it too: a browser that opens one directly then runs nothing it might hold.
"""

from typing import Any, Final

CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def with_security_headers(response: dict[str, Any]) -> dict[str, Any]:
    """The resolver's proxy response with the headers set (replacing any a route set itself)."""
    multi = response.get("multiValueHeaders")
    if isinstance(multi, dict):
        multi.update({name: [value] for name, value in SECURITY_HEADERS.items()})
    else:
        response["headers"] = {**(response.get("headers") or {}), **SECURITY_HEADERS}
    return response
