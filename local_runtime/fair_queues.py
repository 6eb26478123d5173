"""SQS fair queues, emulated: which visible messages of a standard queue a ReceiveMessage returns first.

moto stores a message's `MessageGroupId` on a standard queue but serves messages in plain order, so
one client's backlog would delay every other client's new jobs. AWS documents fair queues
(SQS Developer Guide, "How Amazon SQS fair queues work"); the rules emulated here:

- A message's tenant is its `MessageGroupId`; a message without one is a tenant of its own.
- A tenant is noisy while it holds more than NOISY_SHARE of the queue's in-flight messages (received,
  not yet deleted) and at least NOISY_MIN_IN_FLIGHT of them. (AWS also counts a tenant's share of
  consumer processing time; that measure is not emulated.)
- A receive returns quiet tenants' messages first, in queue order; noisy tenants' messages come after
  them, the noisy tenant with the fewest in flight first. Nothing is dropped or held back: with no
  quiet message waiting, a receive returns the noisy tenants' messages as usual.
- Only the order changes: a message is received (and its receive count raised) only when it is
  returned, so the order can never bring a message nearer a redrive to the DLQ.
- FIFO queues keep moto's own order (their groups are ordering groups, not tenants).

`serve_fairly` replaces moto's `Queue.messages` (the visible messages a receive walks, in order); the
local runtime's moto server applies it, and so does the in-process test pipeline, so tests and
`make run` deliver across clients alike (tests/local_runtime/unit/test_fair_queues.py, rule by rule).
"""

from collections import Counter
from collections.abc import Callable
from typing import Any

from moto.sqs.models import Queue

NOISY_SHARE = 0.10
NOISY_MIN_IN_FLIGHT = 30


def _tenant(message: Any) -> object:
    return message.group_id if message.group_id is not None else message  # no group: its own tenant


def fair_order(queue: Any) -> list[Any]:
    """The queue's visible, undelayed messages in the order a fair queue serves them."""
    waiting = [m for m in queue._messages if m.visible and not m.delayed]
    if queue.fifo_queue:
        return waiting
    in_flight = Counter(_tenant(m) for m in queue.pending_messages if not m.visible)
    total = sum(in_flight.values())
    noisy = {
        tenant
        for tenant, count in in_flight.items()
        if count >= NOISY_MIN_IN_FLIGHT and count > NOISY_SHARE * total
    }
    if not noisy:
        return waiting
    quiet = [m for m in waiting if _tenant(m) not in noisy]
    loud = sorted((m for m in waiting if _tenant(m) in noisy), key=lambda m: in_flight[_tenant(m)])
    return quiet + loud  # sorted() is stable: each noisy tenant's messages stay in queue order


def serve_fairly(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """Make every standard queue's receives follow `fair_order`."""
    set_attribute(Queue, "messages", property(fair_order))
