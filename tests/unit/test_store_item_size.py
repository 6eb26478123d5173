"""The size a new job's item is refused at: `item_size`'s count of each attribute kind, no AWS.

DynamoDB counts an attribute as its name's UTF-8 bytes plus its value's: a string's UTF-8 bytes, a
binary's bytes, a number's (significant digits / 2) + 1. `item_size` counts a number as its digits
+ 1, never less than DynamoDB does, so `put_new` never sends an item DynamoDB would refuse (the API
answers its refusal with a 4xx, `test_job_store.py`). These pin each kind's count: a
smaller one moves where a payload is refused (mutation sample 581628's `_value_size` survivors 5, 7).
"""

import pytest

from lambdas.store.codec import item_size


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "é日x"}, 2 + 3 + 1),
        ({"B": b"\x00\x01\x02"}, 3),
        ({"N": "1796000000500"}, 13 + 1),
        ({"N": "-0.5"}, 4 + 1),
    ],
)
def test_each_value_counts_its_bytes_and_a_number_its_digits_plus_one(value: dict, size: int) -> None:
    assert item_size({"v": value}) == len("v") + size


def test_an_item_counts_every_attribute_name_and_value() -> None:
    item = {"jobId": {"S": "abc"}, "attempts": {"N": "0"}, "blob": {"B": b"xy"}, "ü": {"S": ""}}

    assert item_size(item) == (5 + 3) + (8 + 2) + (4 + 2) + (2 + 0)
