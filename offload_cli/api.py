"""The CLI's HTTP calls: one place turns every way a request can fail into one line and an exit code."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target

HTTP_TIMEOUT = 30
PAGE_LIMIT = 100  # the most one page of a list route holds
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


def call(target: Target, method: str, url: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """The JSON document the API answered; anything else raises CliError."""
    try:
        response = requests.request(
            method, url, headers={**target.headers(), **(headers or {})}, timeout=HTTP_TIMEOUT, **kwargs
        )
    except requests.Timeout:
        raise CliError(f"{url} did not answer within {HTTP_TIMEOUT} s", ExitCode.UNREACHABLE) from None
    except requests.RequestException as error:
        hint = " (is `make run` still running?)" if target.local else ""
        raise CliError(f"cannot reach {url}: {_reason(error)}{hint}", ExitCode.UNREACHABLE) from None
    return _document(method, response)


def job_path(job_id: str, *rest: str) -> str:
    """`jobs/{jobId}/...`, the id quoted: an id typed by hand never escapes its path segment."""
    return "/".join(["jobs", quote(job_id, safe=""), *rest])


def get_job(target: Target, job_id: str) -> dict[str, Any]:
    document: dict[str, Any] = call(target, "GET", target.endpoint(job_path(job_id)))
    return document


def pages(
    target: Target, path: str, items: str, limit: int, params: dict[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """Up to `limit` entries of a paged list route (`{items: [...], "nextCursor"}`), page after page."""
    cursor: str | None = None
    left = limit
    while left > 0:
        query = {**(params or {}), "limit": str(min(left, PAGE_LIMIT))}
        if cursor:
            query["cursor"] = cursor
        url = target.endpoint(path)
        document = call(target, "GET", url, params=query)
        entries = document.get(items) if isinstance(document, dict) else None
        where = f"GET {urlsplit(url).path}"
        if not isinstance(entries, list):
            raise CliError(f"{where} answered without its {items!r} list", ExitCode.FAILED)
        yield from entries[:left]
        left -= len(entries)
        following = document.get("nextCursor")
        if not following:
            return
        if following == cursor:  # a cursor that does not move would page forever
            raise CliError(f"{where} answered the same nextCursor twice", ExitCode.FAILED)
        cursor = str(following)


def _document(method: str, response: requests.Response) -> Any:
    try:
        document = response.json()
    except ValueError:
        document = None
    where = f"{method} {urlsplit(response.url).path}"
    if response.status_code >= 400:
        code = ExitCode.REFUSED if response.status_code < 500 else ExitCode.FAILED
        raise CliError(
            f"{where} answered {response.status_code}: {_error_text(document, response.text)}",
            code,
            _api_code(document),
        )
    if document is None:
        raise CliError(
            f"{where} answered {response.status_code} without JSON: {response.text[:200]!r}", ExitCode.FAILED
        )
    return document


def _error_text(document: Any, text: str) -> str:
    """`code: message` from the API's error shape, or API Gateway's `{"message"}`, or the raw text."""
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and "message" in error:
            return f"{error.get('code', 'error')}: {error['message']}"
        if "message" in document:
            return str(document["message"])
    return text[:200] or "(no body)"


def _api_code(document: Any) -> str | None:
    error = document.get("error") if isinstance(document, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _reason(error: requests.RequestException) -> str:
    """The operating system's words ("Connection refused"), not urllib3's nested repr."""
    found = _ERRNO_TEXT.search(str(error))
    return found.group(1).strip() if found else type(error).__name__
