"""What `lambdas.redaction` finds of a remembered secret, and what the api remembers of a request."""

from lambdas.handlers.rest.identity import without_key_value
from lambdas.redaction import REDACTED, redact, redact_value, remember


def test_a_value_is_found_as_sent_in_a_url_and_as_a_signing_secrets_bare_key() -> None:
    """Seen to fail with only the value itself remembered (the percent-encoded form and the key of a
    `whsec_` secret kept)."""
    remember("p@ss word/42", "whsec_c2VjcmV0LWtleQ==")
    text = (
        "a=p@ss word/42 b=p%40ss%20word%2F42 c=p%40ss+word%2F42 d=c2VjcmV0LWtleQ== e=whsec_c2VjcmV0LWtleQ=="
    )
    assert redact(text) == " ".join(f"{k}={REDACTED}" for k in "abcde")
    assert redact_value({"k": ["p@ss word/42", 1, None]}) == {"k": [REDACTED, 1, None]}


def test_a_value_too_short_to_be_a_credential_is_not_remembered() -> None:
    remember("short")
    assert redact("a short line") == "a short line"


def test_the_api_remembers_the_callers_key_as_it_strips_it_from_the_event() -> None:
    """A key a client pasted into its payload is redacted from the api's log lines. Seen to fail with
    `without_key_value` not remembering the header's value."""
    without_key_value({"headers": {"X-Api-Key": "k3y-of-client-alpha"}, "requestContext": {}})
    assert redact("payload: k3y-of-client-alpha") == f"payload: {REDACTED}"


def test_of_many_values_each_is_found_and_one_inside_another_too() -> None:
    """The pattern is a trie of the values: a shorter value that begins a longer one is still found
    alone, and the longer one whole. Seen to fail with the trie's optional end dropped (`abcdefghX`
    kept its secret)."""
    many = [f"tok{n:05d}-{n * 7919 % 100_000:05d}" for n in range(300)]
    remember("abcdefgh", "abcdefghij", *many)
    assert redact("abcdefghij abcdefghX") == f"{REDACTED} {REDACTED}X"
    assert all(redact(f"<{value}>") == f"<{REDACTED}>" for value in many)
