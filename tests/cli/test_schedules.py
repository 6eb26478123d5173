"""`offload schedule` against a real HTTP server on 127.0.0.1 answering the /schedules routes' documented
shapes: the operator's view of every client's schedules, failing ones first, and its actions on one."""

import json
from typing import Any

import pytest

from offload_cli.errors import ExitCode
from tests.cli.run import against, offload
from tests.support.webhook_receiver import Receiver, Reply


def view(schedule_id: str, owner: str, last_error: str | None = None) -> dict[str, Any]:
    return {
        "scheduleId": schedule_id,
        "owner": owner,
        "name": f"{owner}'s",
        "expression": "rate(1 minute)",
        "timeZone": "UTC",
        "job": {"type": "test_echo", "payload": {}, "maxAttempts": 3},
        "overlap": "allow",
        "state": "enabled",
        "createdAt": "2026-12-01T00:00:00.000Z",
        "nextFireTimes": ["2026-12-01T00:01:00.000Z"],
        "lastJobs": [],
        "failing": last_error is not None,
        "lastError": last_error,
        "lastErrorAt": None if last_error is None else "2026-12-01T00:00:30.000Z",
    }


def page(*views: dict[str, Any], cursor: str | None = None) -> Reply:
    body = json.dumps({"schedules": list(views), "nextCursor": cursor}).encode()
    return Reply(200, {"content-type": "application/json"}, body)


def test_the_operators_list_shows_every_clients_schedules_with_owner_failing_first(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Seen failing (alice's listed first, bob's failure on the second page last) with the list printed
    in the API's order."""
    api.script("/v1/schedules?limit=50", page(view("s-1", "alice"), cursor="c2"))
    api.script("/v1/schedules?limit=50&cursor=c2", page(view("s-2", "bob", "ValueError: broken")))

    code, out, err = offload(capsys, *against(api, "schedule", "list"))

    assert (code, err) == (ExitCode.OK, "")
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["s-2", "bob", "enabled"]
    assert lines[1] == "  failing: ValueError: broken"
    assert lines[2].split()[:3] == ["s-1", "alice", "enabled"]


def test_the_operator_names_the_client_of_the_schedule_it_lists_or_pauses(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Seen failing (no `client` sent) with `--client` read but not passed on to the client library."""
    api.script("/v1/schedules?client=alice&limit=50", page(view("s-1", "alice")))
    paused = {**view("s-1", "alice"), "state": "paused"}
    api.script(
        "/v1/schedules/s-1?client=alice",
        Reply(200, {"content-type": "application/json"}, json.dumps(paused).encode()),
    )

    listed = offload(capsys, *against(api, "schedule", "list", "--client", "alice"))
    changed = offload(capsys, *against(api, "schedule", "pause", "s-1", "--client", "alice"))

    assert listed[0] == changed[0] == ExitCode.OK
    assert changed[1].split() == ["s-1", "paused"]
    assert [r.path for r in api.requests] == [
        "/v1/schedules?client=alice&limit=50",
        "/v1/schedules/s-1?client=alice",
    ]
    assert json.loads(api.requests[1].body) == {"state": "paused"}
