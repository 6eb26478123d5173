"""`Client`: offload's HTTP API from Python, sync, with the retries every caller would otherwise hand-write.

Contract:
- Every request has a timeout (`timeout`, seconds) and sends the key as `x-api-key` (or `auth=`, any
  `requests` auth object).
- A connection error, a timeout, a 5xx or a 429 is retried up to `retries` times with exponential
  backoff (`backoff` x 2^n, at most `max_backoff`); a 429's `Retry-After` is honoured instead.
  A 429 is always retried (the API refused the request before doing anything); the others only for
  reads and for requests that carry an `Idempotency-Key`, which a retry sends unchanged.
- `submit` creates the `Idempotency-Key` when the caller gives none, so a retried submit returns the
  same job and can never create a second one.
- An error answer raises the `ApiError` subclass of its status with the API's `error.code` and message;
  a success answer without a field its schema requires raises `IncompleteAnswer`; no answer at all
  raises `Unreachable`.
- A redirect is refused (`ApiError`), never followed: the key is sent to the API's URL and nowhere else.
- `list`, `children` and `deliveries` follow `nextCursor` until it is absent, through empty pages too.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from offload_client.errors import ApiError, RateLimited, Unreachable, WaitTimeout, error_class
from offload_client.models import (
    TERMINAL,
    Child,
    Delivery,
    EventAccepted,
    Job,
    JobSummary,
    Limit,
    Schedule,
    Stats,
    Submitted,
    WebhookSecret,
    camel,
)

PAGE_LIMIT = 100  # the most one page of a list route holds
SCHEDULES_PAGE_LIMIT = 50  # a page of schedules holds fewer: each may carry a 64 KiB payload
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_ERRNO_TEXT = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")


class Client:
    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        auth: requests.auth.AuthBase | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/") + "/"
        self.api_key = api_key
        self.auth = auth
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.session = session or requests.Session()
        self._sleep = sleep

    # -- jobs ---------------------------------------------------------------------------------------

    def submit(
        self,
        type: str,
        payload: dict[str, Any],
        *,
        max_attempts: int | None = None,
        delay_seconds: int | None = None,
        run_at: datetime | None = None,
        idempotency_key: str | None = None,
        priority: str | None = None,
    ) -> Submitted:
        """Create a job; `run_at` (an aware datetime, up to a year ahead) is sent as `runAt`, so the API's
        clock decides when it is due. `priority`: "high", "normal" (the API's default) or "low"."""
        if run_at is not None and delay_seconds is not None:
            raise ValueError("give delay_seconds or run_at, not both")
        body: dict[str, Any] = {"type": type, "payload": payload}
        if max_attempts is not None:
            body["maxAttempts"] = max_attempts
        if run_at is not None:
            body["runAt"] = _rfc3339(run_at)
        if delay_seconds is not None:
            body["delaySeconds"] = delay_seconds
        if priority is not None:
            body["priority"] = priority
        key = idempotency_key or str(uuid.uuid4())
        document = self.request("POST", "jobs", json=body, headers={"idempotency-key": key})
        return Submitted.from_api(document)

    def get(self, job_id: str) -> Job:
        return Job.from_api(self.request("GET", job_path(job_id)))

    def wait(self, job_id: str, timeout: float = 60.0, *, interval: float = 1.0) -> Job:
        """The job once it is done, dead or cancelled; WaitTimeout (with the job as last seen) after `timeout`."""
        deadline = time.monotonic() + timeout
        job = self.get(job_id)
        while job.status not in TERMINAL:
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"job {job_id} is still {job.status} after {timeout:g} s", job)
            self._sleep(interval)
            job = self.get(job_id)
        return job

    def list(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        page_size: int = PAGE_LIMIT,
    ) -> Iterator[JobSummary]:
        """Every job (newest first), or the first `limit`, optionally of one status and type, across pages."""
        query = {name: value for name, value in (("status", status), ("type", type)) if value}
        for entry in self.pages("jobs", "jobs", query, page_size, limit):
            yield JobSummary.from_api(entry)

    def retry(self, job_id: str) -> Submitted:
        """Send a dead or cancelled job round again: the API accepts it (202) with its jobId and status,
        as a submit; `get` or `wait` reads the job itself."""
        return Submitted.from_api(self.request("POST", job_path(job_id, "retry")))

    def cancel(self, job_id: str) -> Job | Submitted:
        """The cancelled Job (200), or, for a large fan-out, the ops job that cancels it (202: its jobId
        and status)."""
        document = self.request("POST", job_path(job_id, "cancel"))
        if isinstance(document, dict) and "type" not in document and set(document) <= {"jobId", "status"}:
            return Submitted.from_api(document)
        return Job.from_api(document)

    def send_event(self, job_id: str, name: str, data: Any = None) -> EventAccepted:
        """Hand `data` to the workflow waiting for the event `name` (`flow.wait_for_event`); Conflict
        (`not_waiting`) when it is not waiting for that name now, NotFound for another client's job."""
        return EventAccepted.from_api(
            self.request("POST", job_path(job_id, "events"), json={"name": name, "data": data})
        )

    def reschedule(self, job_id: str, run_at: datetime) -> Job:
        """Move a job that has not started to `run_at` (an aware datetime)."""
        return Job.from_api(
            self.request("POST", job_path(job_id, "reschedule"), json={"runAt": _rfc3339(run_at)})
        )

    # -- recurring schedules ------------------------------------------------------------------------

    def create_schedule(
        self,
        name: str,
        expression: str,
        type: str,
        payload: dict[str, Any],
        *,
        time_zone: str = "UTC",
        max_attempts: int | None = None,
        overlap: str | None = None,
        paused: bool = False,
        priority: str | None = None,
    ) -> Schedule:
        job: dict[str, Any] = {"type": type, "payload": payload}
        if max_attempts is not None:
            job["maxAttempts"] = max_attempts
        if priority is not None:
            job["priority"] = priority
        body: dict[str, Any] = {"name": name, "expression": expression, "timeZone": time_zone, "job": job}
        if overlap is not None:
            body["overlap"] = overlap
        if paused:
            body["state"] = "paused"
        return Schedule.from_api(self.request("POST", "schedules", json=body))

    def schedules(self, client: str | None = None) -> Iterator[Schedule]:
        """The caller's schedules; the operator's key: `client`'s, or every client's without it."""
        params = {"client": client} if client is not None else None
        for entry in self.pages("schedules", "schedules", params, SCHEDULES_PAGE_LIMIT):
            yield Schedule.from_api(entry)

    def schedule(self, schedule_id: str, client: str | None = None) -> Schedule:
        return Schedule.from_api(
            self.request("GET", schedule_path(schedule_id), params=_client_param(client))
        )

    def update_schedule(self, schedule_id: str, client: str | None = None, **changes: Any) -> Schedule:
        """Change fields of a schedule, named in snake_case (`state="paused"`, `expression=...`); the
        operator names another client's schedule with `client`."""
        body = {camel(name): value for name, value in changes.items()}
        path = schedule_path(schedule_id)
        return Schedule.from_api(self.request("PATCH", path, json=body, params=_client_param(client)))

    def pause(self, schedule_id: str, client: str | None = None) -> Schedule:
        return self.update_schedule(schedule_id, client, state="paused")

    def resume(self, schedule_id: str, client: str | None = None) -> Schedule:
        return self.update_schedule(schedule_id, client, state="enabled")

    def run_schedule(self, schedule_id: str, client: str | None = None) -> Submitted:
        """One firing now: the job it created."""
        path = schedule_path(schedule_id, "run")
        return Submitted.from_api(self.request("POST", path, params=_client_param(client)))

    def delete_schedule(self, schedule_id: str, client: str | None = None) -> Schedule:
        path = schedule_path(schedule_id)
        return Schedule.from_api(self.request("DELETE", path, params=_client_param(client)))

    def children(self, job_id: str, *, page_size: int = PAGE_LIMIT) -> Iterator[Child]:
        for entry in self.pages(job_path(job_id, "children"), "children", None, page_size):
            yield Child.from_api(entry)

    def deliveries(self, job_id: str, *, page_size: int = PAGE_LIMIT) -> Iterator[Delivery]:
        for entry in self.pages(job_path(job_id, "deliveries"), "deliveries", None, page_size):
            yield Delivery.from_api(entry)

    def stats(self) -> Stats:
        return Stats.from_api(self.request("GET", "stats"))

    def limits(self) -> tuple[Limit, ...]:
        """Each job type's flow-control limit and its keys in use (the operator's key only), page after
        page; a type whose keys go on over a page is one Limit."""
        merged: list[dict[str, Any]] = []
        for entry in self.pages("limits", "limits"):
            if merged and merged[-1]["type"] == entry["type"]:
                merged[-1] = {**merged[-1], "keys": [*merged[-1]["keys"], *entry["keys"]]}
            else:
                merged.append(entry)
        return tuple(Limit.from_api(item) for item in merged)

    def webhook_secret(self, client: str | None = None) -> WebhookSecret:
        """The caller's webhook signing secret; the operator may name any `client` (its key id, or in
        IAM mode its name)."""
        params = {"client": client} if client is not None else None
        return WebhookSecret.from_api(self.request("GET", "webhook-secret", params=params))

    # -- the transport ------------------------------------------------------------------------------

    def pages(
        self,
        path: str,
        items: str,
        params: dict[str, str] | None = None,
        page_size: int = PAGE_LIMIT,
        limit: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every entry of a paged route (`{items: [...], "nextCursor"}`), page after page.

        A page may be empty and still carry a nextCursor (a filter that matched nothing in one slice of
        the table): the walk goes on while a cursor comes back, and stops when none does. With `limit`,
        it stops after that many entries, asking no page for more than it still needs.
        """
        cursor: str | None = None
        left = math.inf if limit is None else limit
        while left > 0:
            query = {**(params or {}), "limit": str(int(min(page_size, left)))}
            if cursor:
                query["cursor"] = cursor
            document = self.request("GET", path, params=query)
            entries = document.get(items) if isinstance(document, dict) else None
            where = urlsplit(self._url(path)).path
            if not isinstance(entries, list):
                raise ApiError(200, None, f"answered without its {items!r} list", method="GET", path=where)
            taken = entries if limit is None else entries[: int(left)]
            yield from taken
            left -= len(taken)
            following = document.get("nextCursor")
            if not following:
                return
            if following == cursor:  # a cursor that does not move would page forever
                raise ApiError(200, None, "answered the same nextCursor twice", method="GET", path=where)
            cursor = str(following)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The JSON the API answered for `path` (relative to the base URL, or a full URL)."""
        url = self._url(path)
        sent = {"content-type": "application/json", **self._key(), **(headers or {})}
        may_repeat = method.upper() in _READS or any(name.lower() == "idempotency-key" for name in sent)
        attempt = 0
        while True:
            try:
                # Redirects are refused, not followed: a redirect would carry the key (x-api-key, or
                # SigV4's headers) to wherever it points. The API never redirects.
                response = self.session.request(
                    method,
                    url,
                    json=json,
                    params=params,
                    headers=sent,
                    auth=self.auth,
                    timeout=self.timeout,
                    allow_redirects=False,
                )
            except requests.RequestException as error:
                if may_repeat and attempt < self.retries:
                    self._sleep(self._delay(attempt))
                    attempt += 1
                    continue
                if isinstance(error, requests.Timeout):
                    raise Unreachable(
                        f"{url} did not answer within {self.timeout:g} s", timed_out=True
                    ) from None
                raise Unreachable(f"cannot reach {url}: {_reason(error)}") from None
            status = response.status_code
            again = status == 429 or (status >= 500 and may_repeat)
            if again and attempt < self.retries:
                self._sleep(self._delay(attempt, response))
                attempt += 1
                continue
            return _document(method, response)

    def _url(self, path: str) -> str:
        return path if "://" in path else self.url + path.lstrip("/")

    def _key(self) -> dict[str, str]:
        return {"x-api-key": self.api_key} if self.api_key else {}

    def _delay(self, attempt: int, response: requests.Response | None = None) -> float:
        told = retry_after(response) if response is not None else None
        if told is not None:
            return min(told, self.max_backoff)
        return min(self.backoff * 2**attempt, self.max_backoff)


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("run_at must be an aware datetime (with a UTC offset)")
    return moment.isoformat()


def schedule_path(schedule_id: str, *rest: str) -> str:
    return "/".join(["schedules", quote(schedule_id, safe=""), *rest])


def job_path(job_id: str, *rest: str) -> str:
    """`jobs/{jobId}/...`, the id quoted: an id from anywhere never escapes its path segment."""
    return "/".join(["jobs", quote(job_id, safe=""), *rest])


def retry_after(response: requests.Response) -> float | None:
    """Retry-After in seconds, given as seconds or as an HTTP date; None when absent or unreadable."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _document(method: str, response: requests.Response) -> Any:
    try:
        document = response.json()
    except ValueError:
        document = None
    path = urlsplit(response.url).path
    status = response.status_code
    if status >= 400:
        code, message = _error(document, response.text)
        kind = error_class(status)
        if kind is RateLimited:
            raise RateLimited(
                status, code, message, method=method, path=path, retry_after=retry_after(response)
            )
        raise kind(status, code, message, method=method, path=path, details=_details(document))
    if response.is_redirect or 300 <= status < 400:
        where = response.headers.get("location", "(no Location)")
        raise ApiError(
            status,
            None,
            f"answered a redirect ({status}) to {where}; the client follows none, so the key never goes "
            "anywhere else: use the API's own URL",
            method=method,
            path=path,
        )
    if document is None:
        raise ApiError(
            status, None, f"answered {status} without JSON: {response.text[:200]!r}", method=method, path=path
        )
    return document


def _error(document: Any, text: str) -> tuple[str | None, str]:
    """(code, message) from the API's `{"error": {code, message}}`, API Gateway's `{"message"}`, or the text."""
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and "message" in error:
            code = error.get("code")
            return (code if isinstance(code, str) else "error"), str(error["message"])
        if "message" in document:
            return None, str(document["message"])
    return None, text[:200] or "(no body)"


def _details(document: Any) -> list[dict[str, Any]] | None:
    """The API's `error.details` (the field errors of a 400 or 422), when it sent a list of them."""
    error = document.get("error") if isinstance(document, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    if not isinstance(details, list):
        return None
    return [d for d in details if isinstance(d, dict)] or None


def _reason(error: requests.RequestException) -> str:
    """The operating system's words ("Connection refused"), not urllib3's nested repr."""
    found = _ERRNO_TEXT.search(str(error))
    return found.group(1).strip() if found else type(error).__name__


def _client_param(client: str | None) -> dict[str, str] | None:
    return {"client": client} if client is not None else None
