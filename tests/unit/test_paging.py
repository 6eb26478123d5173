"""Listing cursors (lambdas/lifecycle/requests/paging.py): values a caller controls that must be refused, an
offset cursor outside its list, a listing cursor's position past its bound or its state not an object
of shards. Found by `make mutate`; each test was first run against the one-line break its docstring
names, seen to fail, then restored."""

import pytest

from lambdas.lifecycle.errors import InvalidCursorError
from lambdas.lifecycle.requests import paging


@pytest.mark.parametrize("state", [-1, 11, True, "3", 2.0, [1]])
def test_an_offset_cursor_outside_its_list_or_not_an_integer_is_refused(state: object) -> None:
    """Broken lines: `offset`'s `type(state) is not int or not 0 <= state <= maximum` with `and`; its
    `InvalidCursorError("the cursor is malformed")` as `(None)` (the text is the 400's `error.message`;
    sample 581628's `x_offset__mutmut_10`)."""
    with pytest.raises(InvalidCursorError, match=r"^the cursor is malformed$"):
        paging.offset(state, maximum=10)


@pytest.mark.parametrize("state", [None, 0, 10])
def test_an_offset_cursor_within_its_list_is_taken(state: int | None) -> None:
    assert paging.offset(state, maximum=10) == (state or 0)


def test_a_listing_cursors_text_position_may_be_64_characters_and_no_more() -> None:
    """Broken line: `_position`'s `0 < len(str(at[0])) <= 64` as `< 64`."""
    assert paging.shard_positions({"0": ["x" * 64, "job"]}, shards=1, numeric=False) == {0: ("x" * 64, "job")}
    for bad in ("x" * 65, ""):
        with pytest.raises(InvalidCursorError):
            paging.shard_positions({"0": [bad, "job"]}, shards=1, numeric=False)


def test_a_cursor_naming_a_shard_the_list_does_not_have_says_so() -> None:
    """Broken line: `shard_positions`' `InvalidCursorError("the cursor names a shard ...")` as `(None)`."""
    with pytest.raises(InvalidCursorError, match=r"^the cursor names a shard this list does not have$"):
        paging.shard_positions({"2": paging.END}, shards=2, numeric=True)


@pytest.mark.parametrize("state", [[["x", "job"]], "end", 3])
def test_a_listing_cursor_whose_state_is_not_an_object_of_shards_is_called_malformed(state: object) -> None:
    """Broken line: `shard_positions`' `InvalidCursorError("the cursor is malformed")` as
    `("XXthe cursor is malformedXX")` (the text is the 400's `error.message`)."""
    with pytest.raises(InvalidCursorError, match=r"^the cursor is malformed$"):
        paging.shard_positions(state, shards=2, numeric=True)
