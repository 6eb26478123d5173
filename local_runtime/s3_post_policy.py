"""S3's rules for a browser-form POST upload, which moto's server does not apply (it stores any POST).

The api hands out presigned POSTs (`lambdas/store/uploads.py`) whose policy fixes the key, the
owner's metadata and the content type, and bounds the size. In AWS, S3 checks that policy before it
stores a byte; moto ignores it, so without this module a local client could change its form and
upload anything, anywhere, of any size. The rules applied here, as S3 applies them to a POST with a
`policy` field (SigV4: `x-amz-algorithm`, `x-amz-credential`, `x-amz-date`, `x-amz-signature`):

1. the signature is the hex HMAC-SHA256 of the base64 policy with the SigV4 signing key of the
   credential's secret, date, region and `s3`; an unknown access key or a wrong signature is 403
   (`InvalidAccessKeyId`, `SignatureDoesNotMatch`);
2. a policy past its `expiration` is 403 `AccessDenied` ("Policy expired");
3. every condition holds: `{"field": value}` and `["eq", "$field", value]` exactly, `["starts-with",
   "$field", prefix]` by prefix, against the form's fields (`bucket` is the bucket's name); one that
   fails is 403 `AccessDenied` naming it;
4. every form field is covered by a condition, except `policy`, `x-amz-signature`, `file` and
   `x-ignore-*` ones; an extra field is 403 `AccessDenied` ("Extra input fields");
5. `["content-length-range", min, max]`: a file over `max` bytes is 400 `EntityTooLarge` (with the
   proposed and the allowed size), one under `min` 400 `EntityTooSmall`.

A POST without a policy is an anonymous write, which the stack's bucket (all public access blocked)
refuses: 403 `AccessDenied`. Field names compare without case, values exactly.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from local_runtime.context import CREDENTIALS

_UNCHECKED = frozenset({"policy", "x-amz-signature", "file"})


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str
    extra: tuple[tuple[str, str], ...] = ()

    def xml(self) -> str:
        parts = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in self.extra)
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{self.code}</Code><Message>{escape(self.message)}</Message>{parts}</Error>"
        )


def local_credentials() -> dict[str, str]:
    """The local runtime's one credential (what its functions sign with): access key id -> secret."""
    return {CREDENTIALS["AWS_ACCESS_KEY_ID"]: CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}


def check(
    form: Mapping[str, str],
    bucket: str,
    size: int,
    now: datetime,
    credentials: Mapping[str, str],
) -> Refusal | None:
    """Why S3 would refuse this POST of a `size`-byte file to `bucket`; None when it would store it."""
    fields = {name.lower(): value for name, value in form.items()}
    encoded = fields.get("policy")
    if encoded is None:
        return _denied("Access Denied")
    signed = _signature_refusal(fields, encoded, credentials)
    if signed is not None:
        return signed
    try:
        policy = json.loads(base64.b64decode(encoded, validate=True))
        expiration = datetime.fromisoformat(str(policy["expiration"]).replace("Z", "+00:00"))
        conditions = list(policy["conditions"])
    except (binascii.Error, ValueError, KeyError, TypeError):
        return Refusal(400, "InvalidPolicyDocument", "Invalid Policy: Invalid JSON.")
    if expiration <= now:
        return _denied("Invalid according to Policy: Policy expired.")
    values = {**fields, "bucket": bucket}
    covered: set[str] = set()
    for condition in conditions:
        refused = _condition_refusal(condition, values, size, covered)
        if refused is not None:
            return refused
    extra = sorted(
        name
        for name in fields
        if name not in _UNCHECKED and name not in covered and not name.startswith("x-ignore-")
    )
    if extra:
        return _denied(f"Invalid according to Policy: Extra input fields: {', '.join(extra)}")
    return None


def _signature_refusal(
    fields: Mapping[str, str], encoded: str, credentials: Mapping[str, str]
) -> Refusal | None:
    credential = fields.get("x-amz-credential", "").split("/")
    if fields.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or len(credential) != 5:
        return _denied("Invalid according to Policy: the SigV4 form fields are missing")
    access_key, date, region, service, _ = credential
    secret = credentials.get(access_key)
    if secret is None:
        return Refusal(
            403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
        )
    key = f"AWS4{secret}".encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, encoded.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields.get("x-amz-signature", "")):
        return Refusal(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )
    return None


def _condition_refusal(
    condition: Any, values: Mapping[str, str], size: int, covered: set[str]
) -> Refusal | None:
    if isinstance(condition, dict):
        ((name, expected),) = condition.items()
        operator, name = "eq", str(name).lower()
    elif isinstance(condition, list) and condition and condition[0] == "content-length-range":
        low, high = int(condition[1]), int(condition[2])
        if size > high:
            return Refusal(
                400,
                "EntityTooLarge",
                "Your proposed upload exceeds the maximum allowed size",
                (("ProposedSize", str(size)), ("MaxSizeAllowed", str(high))),
            )
        if size < low:
            return Refusal(
                400,
                "EntityTooSmall",
                "Your proposed upload is smaller than the minimum allowed size",
                (("ProposedSize", str(size)), ("MinSizeAllowed", str(low))),
            )
        return None
    elif isinstance(condition, list) and len(condition) == 3 and str(condition[1]).startswith("$"):
        operator, name, expected = str(condition[0]).lower(), str(condition[1])[1:].lower(), condition[2]
    else:
        return Refusal(
            400, "InvalidPolicyDocument", f"Invalid Policy: Invalid condition {json.dumps(condition)}"
        )
    covered.add(name)
    actual = values.get(name)
    holds = actual is not None and (
        actual == expected
        if operator == "eq"
        else operator == "starts-with" and actual.startswith(str(expected))
    )
    if holds:
        return None
    return _denied(
        f'Invalid according to Policy: Policy Condition failed: ["{operator}", "${name}", {json.dumps(expected)}]'
    )


def _denied(message: str) -> Refusal:
    return Refusal(403, "AccessDenied", message)


def enforce(
    set_attribute: Callable[[Any, str, Any], None] = setattr, credentials: Mapping[str, str] | None = None
) -> None:
    """Apply the rules to moto's S3 form POSTs, signed with `credentials` (access key id -> secret; the
    local runtime's by default). The in-process tests pass monkeypatch's setattr and moto's own."""
    from moto.s3.responses import S3Response

    known = dict(credentials) if credentials is not None else local_credentials()
    original = S3Response._bucket_response_post

    def checked(self: Any, request: Any, bucket_name: str) -> Any:
        form = {name: str(value) for name, value in self.form_data.items()}
        if "key" in form and not self.is_delete_keys():
            body = self.raw_body if isinstance(self.raw_body, bytes) else str(self.raw_body).encode()
            refused = check(form, bucket_name, len(body), datetime.now(UTC), known)
            if refused is not None:
                return refused.status, {"Content-Type": "application/xml"}, refused.xml()
        return original(self, request, bucket_name)

    set_attribute(S3Response, "_bucket_response_post", checked)
