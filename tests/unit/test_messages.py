"""The main queue's message body and what the worker accepts as one."""

import json
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.data_classes import SQSEvent

from lambdas.lifecycle.attempt.worker import QueueMessage
from lambdas.lifecycle.sweeps.dead_letter import DeadLetter
from lambdas.store.queue import (
    JobMessage,
    Keyed,
    MalformedMessageError,
    Wait,
    job_message,
    parse_job_message,
)


def test_a_message_names_its_job_type_and_owner_and_any_wait_it_carries() -> None:
    """What the worker admits by before it claims. Seen to fail with `parse_job_message` reading the
    wait's `reserved` as `is not None` (every carried wait a reservation)."""
    assert job_message("abc") == '{"jobId":"abc"}'
    assert parse_job_message(job_message("abc")) == JobMessage("abc")
    assert parse_job_message(job_message("abc", "t", "alpha")) == JobMessage("abc", "t", "alpha")
    waited = job_message("abc", "t", "", Wait("*", 12.5))
    assert parse_job_message(waited) == JobMessage("abc", "t", "", Wait("*", 12.5))
    reserved = parse_job_message(job_message("abc", "t", "a", Wait(None, 3.0, reserved=True)))
    assert reserved.wait == Wait(None, 3.0, reserved=True)


def test_a_new_childs_message_carries_its_payload_key_and_pause_without_a_wait() -> None:
    """A delivery's host key rides in its message so its first admission reads no job. Seen to fail
    with `parse_job_message`'s `Keyed` branch removed (the key dropped: a GetItem per delivery)."""
    body = job_message("abc", "t", "alpha", keyed=Keyed("example.com", "p1"))
    assert parse_job_message(body) == JobMessage("abc", "t", "alpha", keyed=Keyed("example.com", "p1"))
    assert parse_job_message(body).wait is None
    # a wait's own key wins; a message without a type says nothing else
    waited = job_message("abc", "t", "", Wait("k", 2.0), keyed=Keyed("other", "p"))
    assert parse_job_message(waited) == JobMessage("abc", "t", "", Wait("k", 2.0))
    assert job_message("abc", keyed=Keyed("k", "p")) == '{"jobId":"abc"}'


@pytest.mark.parametrize("body", ["", "not json", "[]", "{}", '{"jobId": 7}', '{"jobId": ""}', "null"])
def test_a_body_that_names_no_job_is_malformed(body: str) -> None:
    with pytest.raises(MalformedMessageError):
        parse_job_message(body)


def test_a_canonical_sqs_event_reads_as_queue_messages_and_dead_letters() -> None:
    event = SQSEvent(json.loads((Path(__file__).parents[1] / "events" / "sqs_batch.json").read_text()))
    records = list(event.records)

    messages = [QueueMessage.from_record(r) for r in records]
    letters = [DeadLetter.from_record(r) for r in records]

    assert [parse_job_message(m.body).job_id for m in messages] == [
        "01JDXQ8W6Q4ZB0Q8E5RH8T9V3M",
        "01JDXQ8W6QAY1D7HS7D0XK2F5N",
    ]
    assert messages[0].receipt_handle.startswith("AQEBwJnK")
    assert [(d.reason, d.receive_count) for d in letters] == [
        (None, 1),
        ("attempts exhausted (5/5): downstream unavailable", 3),
    ]
    assert letters[1].message_id == "2e1424d4-f796-459a-8184-9c92662be6da"
