"""`webhook_fanout`: one event, up to 1000 endpoints, one child delivery job per endpoint.

The fan-out job does no HTTP itself. It writes one `webhook_delivery` child per endpoint and queues
them, then waits (`AwaitChildren`) until every child is delivered or dead. Each endpoint therefore
retries on its own schedule, and an endpoint that already succeeded is never sent the event again.

A child's id is derived from (fan-out id, endpoint id), so running the fan-out again (a retry, a
duplicate message) finds the children it already wrote and creates none twice. A child whose message
was lost between the write and the send (a crash in between) is still `pending` in the table, and the
recovery sweep re-sends it once it is overdue.

Children do not copy a large event: 1000 copies of a 200 KB payload would be 200 MB of DynamoDB
writes. A child holds its endpoint, and the event's body only when it is at most CARRIED_EVENT_BYTES;
otherwise it reads the event from its parent's record when it runs (see `webhook_delivery`).

A fan-out must not turn one request into a flood at a third party, so at submission (422):
- two endpoints may not share a URL (after the host is normalised: `HOOKS.example.com.` is
  `hooks.example.com`), whatever their ids;
- endpoints x event size may not exceed MAX_FANOUT_BYTES: what one round of deliveries sends.

The submission's DNS checks (every host resolved, every address public) share one deadline,
DNS_CHECK_SECONDS, so a slow resolver cannot hold the API function until its timeout; a host not
checked by then is accepted, and checked before every delivery as always.
"""

import time
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lambdas.jobs import ssrf
from lambdas.jobs.base import (
    AwaitChildren,
    Capability,
    ChildRef,
    InvalidPayloadError,
    JobContext,
    JobType,
    SubmissionContext,
)
from lambdas.jobs.types.webhook_delivery import (
    CARRIED_EVENT_BYTES,
    DELIVERY_TYPE,
    NAME_PATTERN,
    WebhookDeliveryPayload,
    delivery_id,
    event_body,
    target_policy,
)
from lambdas.models.job import Job, NewJob
from lambdas.models.retry import OUTAGE_RETRIES
from lambdas.models.timestamps import iso_time
from lambdas.observability import logger

NAME = "webhook_fanout"
MAX_ENDPOINTS = 1000
# 1000 endpoints of 10 KB, or 47 of the largest event a request can carry (about 210 KB); with ten
# attempts at most 100 MB sent per request, where 1000 x 210 KB x 10 attempts was 2 GB.
MAX_FANOUT_BYTES = 10_000_000
# Of the API function's 10 s, what the submission's DNS checks may take together.
DNS_CHECK_SECONDS = 3.0
# DNS look-ups at submission run in parallel, so 1000 endpoints on distinct hosts stay quick.
_LOOKUP_THREADS = 16


class Endpoint(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    id: str = Field(pattern=NAME_PATTERN, description="The receiver's own id for this endpoint.")
    url: str = Field(min_length=1, max_length=ssrf.MAX_URL_LENGTH)


class WebhookFanoutPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    event_type: str = Field(alias="eventType", pattern=NAME_PATTERN, examples=["invoice.paid"])
    data: dict[str, Any] = Field(description="The event body, sent to every endpoint as `data`.")
    endpoints: list[Endpoint] = Field(min_length=1, max_length=MAX_ENDPOINTS)

    @model_validator(mode="after")
    def _unique_endpoint_ids(self) -> "WebhookFanoutPayload":
        seen: set[str] = set()
        for endpoint in self.endpoints:
            if endpoint.id in seen:
                raise ValueError(f"endpoint id {endpoint.id!r} appears more than once")
            seen.add(endpoint.id)
        return self


def check_submission(payload: WebhookFanoutPayload, context: SubmissionContext) -> None:
    """Refuse (422) a fan-out too large to send, one that names a URL twice, and any endpoint the SSRF
    policy refuses, including after resolving its host name.

    A host that does not exist is refused too; a resolver that is merely unavailable, or too slow
    for the deadline, is not, since every delivery checks again before it connects.
    """
    _check_volume(payload)
    policy = target_policy(context.settings)
    targets: dict[str, ssrf.Target] = {}
    first_of_url: dict[tuple[str, str, int, str], str] = {}
    for index, endpoint in enumerate(payload.endpoints):
        try:
            target = ssrf.parse(endpoint.url, policy)
        except ssrf.RefusedTargetError as error:
            raise InvalidPayloadError(f"endpoints[{index}] ({endpoint.id}): {error}") from None
        earlier = first_of_url.setdefault((target.scheme, target.host, target.port, target.path), endpoint.id)
        if earlier != endpoint.id:
            raise InvalidPayloadError(
                f"endpoints[{index}] ({endpoint.id}) has the same URL as {earlier}; each URL is sent to once"
            )
        if not target.is_ip_literal:
            targets.setdefault(target.host, target)
    problems = _resolution_problems(list(targets.values()), policy)
    if problems:
        raise InvalidPayloadError("; ".join(sorted(problems)[:5]))


def _check_volume(payload: WebhookFanoutPayload) -> None:
    # The owner is not known here; a key id adds a few dozen bytes to each event, within the bound's margin.
    size = len(event_body(payload.event_type, payload.data, iso_time(time.time()), ""))
    total = size * len(payload.endpoints)
    if total > MAX_FANOUT_BYTES:
        raise InvalidPayloadError(
            f"{len(payload.endpoints)} endpoints x {size:,} bytes of event = {total:,} bytes per round "
            f"of deliveries; the limit is {MAX_FANOUT_BYTES:,}"
        )


def _resolution_problems(targets: list[ssrf.Target], policy: ssrf.TargetPolicy) -> list[str]:
    """What resolving the targets found wrong, within DNS_CHECK_SECONDS for all of them together."""
    if not targets:
        return []
    # Not `with`: leaving it waits for every look-up. Look-ups past the deadline cannot be stopped;
    # they finish on their threads after the response, and their answers are ignored.
    pool = ThreadPoolExecutor(max_workers=_LOOKUP_THREADS)
    try:
        futures = [pool.submit(_resolution_problem, target, policy) for target in targets]
        done, late = wait(futures, timeout=DNS_CHECK_SECONDS)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if late:
        logger.info(
            "DNS checks past their deadline; those hosts are checked at delivery", unchecked=len(late)
        )
    return [problem for future in done if (problem := future.result())]


def _resolution_problem(target: ssrf.Target, policy: ssrf.TargetPolicy) -> str | None:
    try:
        ssrf.resolve(target, policy)
    except ssrf.RefusedTargetError as error:
        return str(error)
    except ssrf.UnresolvedTargetError as error:
        return str(error) if error.permanent else None
    return None


def run(payload: WebhookFanoutPayload, context: JobContext) -> AwaitChildren:
    body = event_body(payload.event_type, payload.data, context.created_at, context.owner).decode()
    # A small event rides in each child, so its delivery reads nothing (see `webhook_delivery`).
    carried = (
        {"event_type": payload.event_type, "event_body": body} if len(body) <= CARRIED_EVENT_BYTES else {}
    )
    children = [
        NewJob(
            job_id=delivery_id(context.job_id, endpoint.id),
            job_type=DELIVERY_TYPE,
            payload=WebhookDeliveryPayload(endpoint_id=endpoint.id, url=endpoint.url, **carried).model_dump(
                by_alias=True, exclude_none=True
            ),
            max_attempts=context.max_attempts,
            parent_id=context.job_id,
        )
        for endpoint in payload.endpoints
    ]
    written = context.create_children(children)
    if written.unsent:
        # They are stored as pending; the recovery sweep sends them when they are overdue.
        logger.warning("some delivery messages were not accepted by SQS", unsent=written.unsent)
    logger.info("fan-out children written", childrenTotal=len(children), childrenNew=written.created)
    return AwaitChildren(
        total=len(children),
        result={"eventType": payload.event_type, "deliveries": len(children)},
    )


def children(parent: Job) -> list[ChildRef]:
    """A stored fan-out's deliveries, in the order of its endpoints (none for a job without counts)."""
    if parent.children is None:
        return []
    endpoints = parent.payload.get("endpoints") or []
    return [
        ChildRef(delivery_id(parent.job_id, str(e["id"])), str(e["id"]), str(e["url"]))
        for e in endpoints
        if isinstance(e, dict) and "id" in e
    ]


JOB_TYPE = JobType(
    name=NAME,
    payload_model=WebhookFanoutPayload,
    run=run,
    check_submission=check_submission,
    children=children,
    # Its deliveries take its maxAttempts: by default their own policy's attempts.
    retry=OUTAGE_RETRIES,
    uses=frozenset({Capability.CHILDREN}),
)
