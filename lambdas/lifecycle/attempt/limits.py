"""Flow control in the worker: which limit a job runs under, its key, and taking and giving back its start.

A job type's limit is what it declares (`JobType.limits`), overridden field by field by the stack's
`jobLimits` (WorkerSettings.job_limits, from CDK context). Built in: `send_email` at `perSecond`
SES_PER_SECOND, `webhook_delivery` at `concurrency` WEBHOOK_HOST_CONCURRENCY per `host`.

The key of a job: none (`*`, the whole type), its `owner` (a child's owner is its parent's), the `host`
of its payload's `url` (host and port, lower case), or `payload.<field>` (the field as text, after its
owner and `|` unless the limit's `scope` is `global`; a job without the field has the value `-`). Keys
longer than MAX_KEY_CHARS are cut.

Admission comes before the claim (`Limits.admit`, from what the job's message names), so a refused
start never touches the job's attempts, whatever dies when. A job admitted holds its start (and slot)
until its attempt's outcome is written; the worker then releases the slot. A refused job is handed a
start of its own in its owner's lane (`LimitStore.acquire`) and waits for it (`Worker._wait`): in the
worker when it is at most IN_PROCESS_WAIT_SECONDS away, else in a fresh message delayed until then,
which comes back holding the reservation; it spends no attempt and is never redriven.
"""

import hashlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lambdas.jobs import registry
from lambdas.jobs.base import JobType
from lambdas.lifecycle.errors import ForbiddenError, InvalidCursorError
from lambdas.lifecycle.requests import paging
from lambdas.models.caller import Caller
from lambdas.models.job import Job, Priority
from lambdas.models.limits import (
    MAX_KEY_CHARS,
    WHOLE_TYPE,
    Limit,
    LimitKey,
    LimitKeyView,
    LimitKind,
    LimitScope,
    LimitsView,
    LimitView,
    WaitingFor,
)
from lambdas.models.settings import LimitsSettings
from lambdas.models.timestamps import iso_time
from lambdas.observability import logger
from lambdas.store.limits import Admitted, LimitState, LimitStore, Refused
from lambdas.store.queue import JobMessage, Keyed

MISSING_FIELD = "-"
# Between a payload key's owner and its value (no API key id or IAM role name holds it).
OWNER_SEPARATOR = "|"
# A start reserved this soon is waited for in the worker (a fresh message would cost more than the wait).
IN_PROCESS_WAIT_SECONDS = 2.0
# A reserved start's message is delayed this much less than its start (SQS delays are whole seconds).
RESERVED_EARLY_SECONDS = 1
# At most this many waits in the worker for one message (reserved starts that others took meanwhile).
_IN_PROCESS_WAITS = 4


def limit_of(job_type: JobType[Any], overrides: dict[str, dict[str, Any]]) -> Limit | None:
    """The limit jobs of `job_type` run under on this stack; None when they run unlimited."""
    declared = job_type.limits or Limit()
    fields = overrides.get(job_type.name)
    limit = declared.overridden(fields) if fields else declared
    return limit if limit.active else None


def key_of(limit: Limit, owner: str, payload: Mapping[str, Any]) -> str:
    """Which of the limit's keys a job of `owner` with `payload` counts against."""
    if limit.key == LimitKey.NONE:
        return WHOLE_TYPE
    if limit.key == LimitKey.OWNER:
        value = owner or MISSING_FIELD
    elif limit.key == LimitKey.HOST:
        value = _host(payload.get("url"))
    else:
        field = payload.get(limit.key.removeprefix(LimitKey.PAYLOAD))
        value = MISSING_FIELD if field is None else str(field)
        if limit.scope is LimitScope.OWNER:
            value = f"{owner or MISSING_FIELD}{OWNER_SEPARATOR}{value}"
    return value[:MAX_KEY_CHARS] or MISSING_FIELD


def _reads_payload(limit: Limit) -> bool:
    return limit.key not in (LimitKey.NONE, LimitKey.OWNER)


def keyed(
    job_type: str, owner: str, payload: Mapping[str, Any], overrides: dict[str, dict[str, Any]]
) -> Keyed | None:
    """The limit key and pause a new job's message carries, so its first admission reads no job: only
    for a limit whose key is read from the payload (else the message's type and owner are enough)."""
    loaded = _loaded(job_type)
    limit = limit_of(loaded, overrides) if loaded is not None else None
    if limit is None or not _reads_payload(limit):
        return None
    return Keyed(key_of(limit, owner, payload), pause_of(limit, owner, payload))


def pause_of(limit: Limit, owner: str, payload: Mapping[str, Any]) -> str:
    """Which receiver's pause (Retry-After) holds a job: its owner's, and the payload's `url` where the
    limit's key is read from the payload (a webhook's), so one client's receiver pauses only that
    client's deliveries to that URL. A short digest: it names an attribute of the key's item."""
    url = payload.get("url") if _reads_payload(limit) else None
    scope = f"{owner}\n{url if isinstance(url, str) else ''}"
    return hashlib.sha256(scope.encode()).hexdigest()[:16]


def _host(url: Any) -> str:
    if not isinstance(url, str):
        return MISSING_FIELD
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        return f"{host}:{parts.port}" if parts.port else host or MISSING_FIELD
    except ValueError:
        return MISSING_FIELD


@dataclass
class Admission:
    """A job's admission under its limit (or none): what the worker gives back when the attempt ends,
    and the job's type and owner as the message named them (or as read)."""

    limits: "Limits"
    job_id: str
    job_type: str = ""
    owner: str = ""
    name: str | None = None
    key: str | None = None
    limit: Limit | None = None
    tag: int = 0
    refused: WaitingFor | None = None
    reserved: bool = False  # the refusal's `until` is a start reserved for this job
    pause: str | None = None  # which receiver's pause holds it (`pause_of`)
    priority: Priority = Priority.NORMAL  # as the message named it (or as read)
    started: float = 0.0
    released: bool = False

    def release(self) -> None:
        """Give the slot back (once: a later call does nothing)."""
        if self.name is None or self.limit is None or self.limit.concurrency is None or self.refused:
            return
        if self.released:
            return
        self.released = True
        ran_ms = (time.monotonic() - self.started) * 1000
        try:
            self.limits.store.release(self.name, self.key or WHOLE_TYPE, self.job_id, self.tag, ran_ms)
        except Exception:  # the slot comes back when its lease expires
            logger.exception("could not release a limit slot; it returns when its lease expires")


class Limits:
    def __init__(
        self,
        settings: LimitsSettings,
        store: LimitStore,
        lease_seconds: int,
    ) -> None:
        self._overrides = settings.job_limits
        self.store = store
        self._lease = lease_seconds

    def admit(self, sent: JobMessage, read: Callable[[], Job | None]) -> Admission:
        """Take the start of the job a message names, before the job is claimed. What the message does
        not say (its type and owner in a message from before they were sent; the payload a `host` or
        `payload.<field>` key is read from, on a job's first start) is read from the job, once."""
        job: Job | None = None
        job_type, owner, priority = sent.job_type, sent.owner, sent.priority
        if job_type is None or owner is None:
            job = read()
            if job is None:
                return Admission(self, sent.job_id)  # the claim finds no job either
            job_type, owner, priority = job.job_type, job.owner, job.priority
        admission = Admission(self, sent.job_id, job_type, owner, priority=priority)
        loaded = _loaded(job_type)
        limit = limit_of(loaded, self._overrides) if loaded is not None else None
        if limit is None:
            return admission
        wait = sent.wait
        if wait is not None and wait.key is not None:
            key, pause = wait.key, wait.pause or pause_of(limit, owner, {})
        elif sent.keyed is not None and _reads_payload(limit):
            key, pause = sent.keyed.key, sent.keyed.pause  # worked out from its payload when it was sent
        else:
            if _reads_payload(limit):
                job = job or read()
                if job is None:
                    return admission
            payload = job.payload if job is not None else {}
            key, pause = key_of(limit, owner, payload), pause_of(limit, owner, payload)
        admission.pause = pause
        reserved = wait is not None and wait.reserved
        admission.name, admission.key, admission.limit = job_type, key, limit
        admission.tag = random.getrandbits(48)
        answer = self._acquire(admission, limit, owner, reserved, wait.until if reserved and wait else None)
        admission.started = time.monotonic()
        if isinstance(answer, Refused):
            admission.refused = WaitingFor(answer.kind, key, answer.until, _why(answer, limit))
            admission.reserved = answer.reserved
        return admission

    def _acquire(
        self, admission: Admission, limit: Limit, lane: str, reserved: bool, until: float | None
    ) -> Admitted | Refused:
        """One start for the admission. A refusal hands it a start of its own; one due within
        IN_PROCESS_WAIT_SECONDS is waited for here and taken. A reserved start that another job took
        meanwhile (one that came between) is waited for again here when the rate frees one that soon,
        else the job is handed a new start of its own."""
        name, key = admission.job_type, admission.key or WHOLE_TYPE

        def acquire(reserved: bool, reserve: bool) -> Admitted | Refused:
            return self.store.acquire(
                name,
                key,
                limit,
                admission.job_id,
                admission.tag,
                self._lease,
                lane=lane,
                reserved=reserved,
                reserve=reserve,
                pause=admission.pause,
                priority=admission.priority,
            )

        for _ in range(_IN_PROCESS_WAITS):
            if until is not None:
                self.store.sleep(min(until - self.store.now(), IN_PROCESS_WAIT_SECONDS))
            answer = acquire(reserved, not reserved)
            if isinstance(answer, Admitted) or answer.kind is LimitKind.PAUSED:
                return answer
            soon = answer.until - self.store.now() <= IN_PROCESS_WAIT_SECONDS
            if answer.reserved and not soon:
                return answer  # it waits in a message
            if not (answer.reserved or (soon and answer.kind is LimitKind.PER_SECOND)):
                break  # no slot came free at its reserved start: a slot's time cannot be known
            reserved, until = True, answer.until
        return acquire(True, True)

    def pause(self, job: Job, job_type: JobType[Any], until: float) -> tuple[str, str] | None:
        """Hold the jobs this job's receiver answers for (`pause_of`: its owner's, to its URL) until
        `until` (a receiver's Retry-After); the key and the pause, or None when the type has no limit
        (then only this job waits)."""
        limit = limit_of(job_type, self._overrides)
        if limit is None:
            return None
        key, pause = key_of(limit, job.owner, job.payload), pause_of(limit, job.owner, job.payload)
        self.store.pause(job_type.name, key, pause, until)
        return key, pause

    def limited(self, job_types: list[JobType[Any]]) -> list[tuple[str, Limit]]:
        """Each limited type's name and limit on this stack, by name."""
        listed = [(t.name, limit_of(t, self._overrides)) for t in job_types]
        return sorted((name, limit) for name, limit in listed if limit is not None)


def limits_report(limits: Limits, caller: Caller, most: int = 25, cursor: str | None = None) -> LimitsView:
    """GET /limits: every limited job type's limit and its keys in use, a page of at most `most` keys at
    a time, types by name and each type's keys in order (the operator's view only: keys name clients
    and their hosts). A type is listed on the page where its keys begin, with no keys if it has none."""
    if not caller.operator:
        raise ForbiddenError("only the operator's key reads the limits")
    tag = paging.query_tag("limits")
    at_type, after = _limits_position(paging.decode(tag, cursor))
    job_types = [t for t in map(_loaded, registry.names()) if t is not None]
    views: list[LimitView] = []
    left, next_cursor = most, None
    for name, limit in limits.limited(job_types):
        if at_type is not None and name < at_type:
            continue
        if left == 0:
            next_cursor = paging.encode(tag, [name, None])
            break
        states, last = limits.store.page(name, limit, after if name == at_type else None, left)
        views.append(_view(name, limit, states))
        left -= len(states)
        if last is not None:
            next_cursor = paging.encode(tag, [name, last])
            break
    return LimitsView(limits=views, next_cursor=next_cursor)


def _limits_position(state: Any) -> tuple[str | None, str | None]:
    """Where a cursor of GET /limits stands: [type, last key listed or None]."""
    if state is None:
        return None, None
    if (
        not isinstance(state, list)
        or len(state) != 2
        or not isinstance(state[0], str)
        or not (state[1] is None or isinstance(state[1], str))
    ):
        raise InvalidCursorError("the cursor is malformed")
    return state[0], state[1]


def _view(name: str, limit: Limit, states: list[LimitState]) -> LimitView:
    return LimitView(
        type=name,
        concurrency=limit.concurrency,
        per_second=limit.per_second,
        burst=limit.burst,
        key=limit.key,
        scope=limit.scope,
        keys=[
            LimitKeyView(
                key=state.key,
                running=state.running,
                tokens=state.tokens,
                paused_until=iso_time(state.paused_until) if state.paused_until else None,
                waiting=state.waiting,
            )
            for state in states
        ],
    )


def _loaded(name: str) -> JobType[Any] | None:
    try:
        return registry.get(name)
    except (registry.NotRegisteredError, registry.UnusableTypeError):
        # A helper module registered by name that defines no type, or one this process cannot run (the
        # claim and run then end its job `dead`, saying why).
        return None


def _why(refused: Refused, limit: Limit) -> str:
    if refused.kind is LimitKind.CONCURRENCY:
        return f"all {limit.concurrency} slots of its limit are taken"
    if refused.kind is LimitKind.PER_SECOND:
        return f"its limit of {limit.per_second:g}/s (burst {limit.bucket}) is used up"
    return "its receiver asked to be called later (Retry-After)"
