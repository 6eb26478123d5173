"""`offload limits` against a real HTTP server on 127.0.0.1 answering GET /limits's documented shape."""

import json

import pytest

from offload_cli.errors import ExitCode
from tests.cli.run import against, offload, one_line
from tests.support.webhook_receiver import Receiver, Reply

LIMITS = {
    "limits": [
        {
            "type": "webhook_delivery",
            "concurrency": 10,
            "perSecond": None,
            "burst": None,
            "key": "host",
            "keys": [
                {
                    "key": "hooks.example.com",
                    "running": 10,
                    "tokens": None,
                    "pausedUntil": None,
                    "waiting": 3,
                },
                {
                    "key": "busy.example.org",
                    "running": 0,
                    "tokens": None,
                    "pausedUntil": "2026-12-02T03:00:00Z",
                    "waiting": 7,
                },
            ],
        },
        {"type": "send_email", "concurrency": None, "perSecond": 14, "burst": None, "key": "", "keys": []},
    ],
    "nextCursor": None,
}


def test_limits_prints_each_limit_and_its_keys(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    api.script("/v1/limits?limit=100", _reply(LIMITS))

    code, out, err = offload(capsys, *against(api, "limits"))

    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines() == [
        "webhook_delivery: concurrency 10, key host",
        "  hooks.example.com: 10 running, 3 waiting",
        "  busy.example.org: 0 running, paused until 2026-12-02T03:00:00Z, 7 waiting",
        "send_email: perSecond 14, key none",
    ]


def _reply(document: dict[str, object]) -> Reply:
    return Reply(200, {"content-type": "application/json"}, json.dumps(document).encode())


def test_limits_follows_the_cursor_and_prints_a_type_split_over_pages_once(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Seen to fail with `limits`' `if merged and merged[-1]["type"] == limit["type"]:` as `if False:` (the type's
    header printed again on the second page)."""
    first, rest = LIMITS["limits"][0], LIMITS["limits"][1:]
    page_one = {"limits": [{**first, "keys": first["keys"][:1]}], "nextCursor": "c1"}
    page_two = {"limits": [{**first, "keys": first["keys"][1:]}, *rest], "nextCursor": None}
    api.script("/v1/limits?limit=100", _reply(page_one))
    api.script("/v1/limits?limit=100&cursor=c1", _reply(page_two))

    code, out, _ = offload(capsys, *against(api, "limits"))

    assert code == ExitCode.OK
    assert [line for line in out.splitlines() if not line.startswith(" ")] == [
        "webhook_delivery: concurrency 10, key host",
        "send_email: perSecond 14, key none",
    ]
    assert len(out.splitlines()) == 4


def test_a_clients_key_is_told_limits_are_the_operators(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    body = {"error": {"code": "forbidden", "message": "only the operator's key reads the limits"}}
    api.script(
        "/v1/limits?limit=100", Reply(403, {"content-type": "application/json"}, json.dumps(body).encode())
    )

    code, out, err = offload(capsys, *against(api, "limits"))

    assert out == ""
    assert code != ExitCode.OK
    assert "operator" in one_line(err)
