"""The CLI's HTTP calls, made by offload_client (the one HTTP client in the repository): this module
turns every way a request can fail into one line and an exit code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from offload_client import ApiError, Client, Unreachable
from offload_client.client import PAGE_LIMIT, job_path

from offload_cli.errors import CliError, ExitCode
from offload_cli.target import Target

HTTP_TIMEOUT = 30
# A CLI user is waiting at the terminal: retry a dropped connection, a 429 or a 5xx twice, briefly.
RETRIES = 2
BACKOFF = 0.25

__all__ = ["call", "get_job", "job_path", "pages"]


def client(target: Target) -> Client:
    auth = target.signer.auth() if target.signer else None
    return Client(
        target.url, target.api_key, auth=auth, timeout=HTTP_TIMEOUT, retries=RETRIES, backoff=BACKOFF
    )


def call(target: Target, method: str, url: str, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """The JSON document the API answered; anything else raises CliError."""
    with _failures(target):
        return client(target).request(method, url, headers=headers, **kwargs)


def get_job(target: Target, job_id: str) -> dict[str, Any]:
    document: dict[str, Any] = call(target, "GET", target.endpoint(job_path(job_id)))
    return document


def pages(
    target: Target, path: str, items: str, limit: int, params: dict[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """Up to `limit` entries of a paged list route (`{items: [...], "nextCursor"}`), page after page."""
    entries = client(target).pages(path, items, params, PAGE_LIMIT, limit)
    with _failures(target):
        yield from entries


@contextmanager
def _failures(target: Target) -> Iterator[None]:
    """Raise offload_client's failures as CliError with the CLI's exit codes (docs/local.md)."""
    try:
        yield
    except Unreachable as error:
        hint = " (is `make run` still running?)" if target.local and not error.timed_out else ""
        raise CliError(f"{error}{hint}", ExitCode.UNREACHABLE) from None
    except ApiError as error:
        code = ExitCode.REFUSED if 400 <= error.status < 500 else ExitCode.FAILED
        raise CliError(str(error), code, error.code) from None
