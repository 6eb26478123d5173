"""The main queue's message body and what the worker accepts as one."""

import pytest

from lambdas.store.queue import MalformedMessageError, job_message, parse_job_message


def test_a_message_carries_only_the_job_id() -> None:
    assert job_message("abc") == '{"jobId": "abc"}'
    assert parse_job_message(job_message("abc")) == "abc"


@pytest.mark.parametrize("body", ["", "not json", "[]", "{}", '{"jobId": 7}', '{"jobId": ""}', "null"])
def test_a_body_that_names_no_job_is_malformed(body: str) -> None:
    with pytest.raises(MalformedMessageError):
        parse_job_message(body)
