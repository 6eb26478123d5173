"""`offload list`, `show`, `retry`, `cancel` and `deliveries` against a real HTTP server on 127.0.0.1.

The server answers with documents of the shapes docs/openapi.json gives for each route (status codes,
pages with `nextCursor`, error bodies): these test the CLI (paging, rendering, one-line errors, exit
codes), not the API; tests/e2e/test_cli.py runs the same commands against the local runtime.
"""

import json
import time
from pathlib import Path
from typing import Any

import pytest

from lambdas.models.timestamps import iso_time
from offload_cli.errors import ExitCode
from tests.cli.run import against, offload, one_line
from tests.support.webhook_receiver import Receiver, Reply

WIDTH = 80


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def _ago(seconds: float) -> str:
    return iso_time(time.time() - seconds)


def summary(job_id: str, status: str = "dead", **fields: Any) -> dict[str, Any]:
    return {
        "jobId": job_id,
        "type": "send_email",
        "status": status,
        "attempts": 5,
        "maxAttempts": 5,
        "createdAt": _ago(185),
        "updatedAt": _ago(60),
        "statusAt": _ago(60),
        "lastError": None,
        "parentId": None,
        "priority": "normal",
        **fields,
    }


def _json(document: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, json.dumps(document).encode())


def _error(status: int, code: str, message: str) -> Reply:
    return _json({"error": {"code": code, "message": message}}, status)


def _page(items: str, entries: list[dict[str, Any]], cursor: str | None = None) -> Reply:
    return _json({items: entries, "nextCursor": cursor})


def test_list_is_an_aligned_table_with_the_last_error_cut_to_the_terminal(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    long_error = "SES refused the message: " + "MessageRejected " * 20
    api.script(
        "/v1/jobs?status=dead&limit=25",
        _page("jobs", [summary("job-a", lastError=long_error), summary("job-bb", type="resize", attempts=2)]),
    )

    code, out, err = offload(capsys, *against(api, "list", "--status", "dead"))

    assert (code, err) == (ExitCode.OK, "")
    header, first, second = out.splitlines()
    assert header.split() == ["ID", "TYPE", "STATUS", "PRIORITY", "ATTEMPTS", "AGE", "LAST", "ERROR"]
    assert first.split()[:6] == ["job-a", "send_email", "dead", "normal", "5/5", "3m"]
    assert second.split() == ["job-bb", "resize", "dead", "normal", "2/5", "3m"]
    assert len(first) == WIDTH
    assert first.endswith("\u2026")
    assert first.index("SES refused") == header.index("LAST ERROR")  # columns line up
    assert first.index("dead") == second.index("dead") == header.index("STATUS")


def test_list_follows_next_cursor_until_the_limit(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    first = [summary(f"j-{n:03}") for n in range(100)]
    second = [summary(f"j-{n:03}") for n in range(100, 150)]
    api.script("/v1/jobs?limit=100", _page("jobs", first, "c1"))
    api.script("/v1/jobs?limit=50&cursor=c1", _page("jobs", second, "c2"))

    code, out, _ = offload(capsys, *against(api, "list", "--limit", "150", "--json"))

    assert code == ExitCode.OK
    printed = [json.loads(line) for line in out.splitlines()]
    assert printed == first + second  # each as the API gave it, one per line
    assert [r.path for r in api.requests] == ["/v1/jobs?limit=100", "/v1/jobs?limit=50&cursor=c1"]


def test_list_stops_at_the_last_page_and_filters_by_type(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs?type=resize&limit=25", _page("jobs", [summary("j-1")], "c1"))
    api.script("/v1/jobs?type=resize&limit=24&cursor=c1", _page("jobs", [], None))

    code, out, _ = offload(capsys, *against(api, "list", "--type", "resize"))

    assert code == ExitCode.OK
    assert len(out.splitlines()) == 2
    assert len(api.requests) == 2


def test_list_prints_no_more_than_the_limit_whatever_a_page_holds(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs?limit=2", _page("jobs", [summary(f"j-{n}") for n in range(3)], "c1"))

    code, out, _ = offload(capsys, *against(api, "list", "--limit", "2", "--json"))

    assert code == ExitCode.OK
    assert [json.loads(line)["jobId"] for line in out.splitlines()] == ["j-0", "j-1"]
    assert len(api.requests) == 1


def test_an_empty_list_says_so(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    api.script("/v1/jobs?status=dead&type=resize&limit=25", _page("jobs", []))

    code, out, _ = offload(capsys, *against(api, "list", "--status", "dead", "--type", "resize"))

    assert (code, out) == (ExitCode.OK, "no jobs with status dead and type resize\n")


@pytest.mark.parametrize(
    "argv", [["--status", "sleeping"], ["--limit", "0"], ["--limit", "many"]], ids=["status", "zero", "word"]
)
def test_bad_list_flags_are_exit_2_before_any_request(
    capsys: pytest.CaptureFixture[str], api: Receiver, argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        offload(capsys, *against(api, "list", *argv))

    assert exited.value.code == ExitCode.USAGE
    assert api.requests == []


@pytest.mark.parametrize(
    ("reply", "expected", "exit_code"),
    [
        (
            _error(400, "invalid_cursor", "the cursor is not one this API gave"),
            "offload: GET /v1/jobs answered 400: invalid_cursor: the cursor is not one this API gave\n",
            ExitCode.REFUSED,
        ),
        (_json({"items": []}), "offload: GET /v1/jobs answered without its 'jobs' list\n", ExitCode.FAILED),
        (
            _page("jobs", [summary("j-1")], "same"),
            "offload: GET /v1/jobs answered the same nextCursor twice\n",
            ExitCode.FAILED,
        ),
    ],
    ids=["api-error", "wrong-shape", "stuck-cursor"],
)
def test_a_page_that_fails_is_one_line(
    capsys: pytest.CaptureFixture[str], api: Receiver, reply: Reply, expected: str, exit_code: ExitCode
) -> None:
    api.script("/v1/jobs?limit=25", _page("jobs", [summary("j-0")], "same"))
    api.script("/v1/jobs?limit=24&cursor=same", reply)

    code, _, err = offload(capsys, *against(api, "list"))

    assert code == exit_code
    assert one_line(err) == expected


def test_retry_of_several_ids_acts_on_each_and_reports_each(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/a/retry", _json({"jobId": "a", "status": "pending"}, 202))
    api.script("/v1/jobs/b/retry", _error(409, "not_retryable", "job b is done; only a dead job is retried"))
    api.script("/v1/jobs/c/retry", _json({"jobId": "c", "status": "waiting"}, 202))

    code, out, err = offload(capsys, *against(api, "retry", "a", "b", "c"))

    assert code == ExitCode.REFUSED
    assert out.splitlines() == ["a  retried, now pending", "c  retried, now waiting"]
    assert (
        err
        == "offload: POST /v1/jobs/b/retry answered 409: not_retryable: job b is done; only a dead job is retried\n"
    )
    assert [r.path for r in api.requests] == ["/v1/jobs/a/retry", "/v1/jobs/b/retry", "/v1/jobs/c/retry"]


def test_cancel_of_ids_that_all_succeed_is_exit_0(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    for job_id in ("a", "b/c"):
        api.script(f"/v1/jobs/{job_id.replace('/', '%2F')}/cancel", _json(summary(job_id, "cancelled")))

    code, out, err = offload(capsys, *against(api, "cancel", "a", "b/c"))

    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines() == ["a  cancelled", "b/c  cancelled"]


def test_a_large_fan_outs_cancel_says_which_ops_job_runs_it(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Broken line: `each`'s `if ops_id != job_id:` as `if False:` (the ops job's `pending` read as the
    fan-out's: "fan  cancelled, now pending")."""
    api.script("/v1/jobs/fan/cancel", _json({"jobId": "ops-1", "status": "pending"}, 202))

    code, out, err = offload(capsys, *against(api, "cancel", "fan"))

    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines() == ["fan  cancel runs as ops job ops-1 (see it with: offload show ops-1)"]


def test_bulk_retry_starts_an_ops_job_and_wait_follows_it(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/retry", _json({"jobId": "ops-1", "status": "pending"}, 202))
    result = {"action": "retry", "matched": 12, "applied": 11, "skipped": 1, "finished": True}
    api.script(
        "/v1/jobs/ops-1",
        _json(summary("ops-1", "processing", type="bulk_action")),
        _json({**summary("ops-1", "done", type="bulk_action"), "result": result}),
    )

    code, out, err = offload(capsys, *against(api, "retry", "--all-dead", "--type", "resize", "--wait"))

    assert (code, err) == (ExitCode.OK, "")
    (started,) = api.to("/v1/jobs/retry")
    assert json.loads(started.body) == {"status": "dead", "type": "resize"}
    assert out.splitlines() == [
        "bulk retry started as ops job ops-1 (see it with: offload show ops-1)",
        "ops job ops-1 done: matched 12, applied 11, skipped 1",
    ]


def test_a_bulk_retry_whose_ops_job_died_says_why_and_exits_1(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/retry", _json({"jobId": "ops-2", "status": "pending"}, 202))
    dead = summary("ops-2", "dead", type="bulk_action", lastError="worker timed out")
    api.script("/v1/jobs/ops-2", _json({**dead, "result": {"matched": 3, "applied": 1, "skipped": 0}}))

    code, out, _ = offload(capsys, *against(api, "retry", "--all-dead", "--wait"))

    assert code == ExitCode.DEAD
    assert out.splitlines()[-1] == "ops job ops-2 dead (worker timed out): matched 3, applied 1, skipped 0"


def test_bulk_retry_with_a_client_key_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/retry", _error(403, "forbidden", "bulk actions need the operator key"))

    code, out, err = offload(capsys, *against(api, "retry", "--all-dead"))

    assert (code, out) == (ExitCode.REFUSED, "")
    assert "needs the operator key and this key is a client's" in one_line(err)
    assert "--key operator" in err


@pytest.mark.parametrize(
    "argv",
    [["retry"], ["retry", "a", "--all-dead"], ["retry", "a", "--type", "resize"]],
    ids=["none", "both", "type"],
)
def test_retry_needs_ids_or_all_dead(
    capsys: pytest.CaptureFixture[str], api: Receiver, argv: list[str]
) -> None:
    code, _, err = offload(capsys, *against(api, *argv))

    assert code == ExitCode.USAGE
    one_line(err)
    assert api.requests == []


def test_an_unreachable_api_ends_a_multi_id_retry_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = offload(capsys, "--url", "http://127.0.0.1:9/v1/", "--api-key", "k", "retry", "a", "b")

    assert (code, out) == (ExitCode.UNREACHABLE, "")
    assert "/jobs/a/retry" in one_line(err)


def test_status_wait_ends_on_a_cancelled_job(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    api.script("/v1/jobs/j-1", _json(summary("j-1", "cancelled")))

    code, out, _ = offload(capsys, *against(api, "status", "j-1", "--wait", "--timeout", "5"))

    assert code == ExitCode.DEAD
    assert json.loads(out)["status"] == "cancelled"


def test_key_names_a_key_of_the_local_runtime(
    capsys: pytest.CaptureFixture[str], api: Receiver, tmp_path: Path
) -> None:
    keys = [
        {"name": "alpha", "role": "client", "value": "alpha-value"},
        {"name": "ops", "role": "operator", "value": "operator-value"},
    ]
    state = {"url": api.url("/v1/"), "apiKey": "alpha-value", "keys": keys}
    (tmp_path / "no-runtime.json").write_text(json.dumps(state))
    api.script("/v1/jobs?limit=25", _page("jobs", []))

    code, _, _ = offload(capsys, "--key", "operator", "list")
    unknown = offload(capsys, "--key", "gamma", "list")

    assert code == ExitCode.OK
    assert api.requests[0].headers["x-api-key"] == "operator-value"
    assert unknown[0] == ExitCode.USAGE
    assert (
        one_line(unknown[2]) == "offload: the local runtime has no key named 'gamma' (its keys: alpha, ops)\n"
    )


def _fan_out(job_id: str) -> dict[str, Any]:
    history = [
        {"attempt": 1, "startedAt": _ago(120), "endedAt": _ago(118.5), "outcome": "done", "error": None},
    ]
    return {
        **summary(job_id, "done", type="webhook_fanout", attempts=1),
        "result": {"endpoints": 2},
        "children": {"total": 2, "pending": 0, "delivered": 1, "failed": 1, "cancelled": 0},
        "history": history,
    }


def _child(child_id: str, status: str, error: str | None) -> dict[str, Any]:
    return {
        "jobId": child_id,
        "endpointId": f"ep-{child_id}",
        "url": f"https://hooks.example.com/{child_id}",
        "status": status,
        "attempts": 3,
        "lastError": error,
    }


def _delivery(attempt: int, status: int | None, error: str | None) -> dict[str, Any]:
    return {
        "deliveryId": f"d-{attempt}",
        "endpointId": "ep-c2",
        "attempt": attempt,
        "attemptedAt": _ago(100 - attempt),
        "outcome": "failed" if error else "delivered",
        "httpStatus": status,
        "latencyMs": 41,
        "response": "ok" if not error else None,
        "error": error,
    }


def test_show_tells_a_fan_outs_story_in_sections(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    api.script("/v1/jobs/p-1", _json(_fan_out("p-1")))
    api.script(
        "/v1/jobs/p-1/children?limit=50",
        _page("children", [_child("c1", "done", None), _child("c2", "dead", "HTTP 410 from the receiver")]),
    )
    api.script("/v1/jobs/p-1/deliveries?limit=20", _page("deliveries", [_delivery(1, 410, "HTTP 410 Gone")]))

    code, out, err = offload(capsys, *against(api, "show", "p-1"))

    assert (code, err) == (ExitCode.OK, "")
    lines = out.splitlines()
    assert lines[0] == "job p-1  webhook_fanout  done"
    assert "  attempts      1 of 5" in lines
    assert "  children      2 total: 0 pending, 1 delivered, 1 failed, 0 cancelled" in lines
    assert [line for line in lines if line and not line.startswith(" ")] == [
        "job p-1  webhook_fanout  done",
        "attempts (oldest first)",
        "children",
        "deliveries",
    ]
    assert any(line.split()[:4] == ["c2", "ep-c2", "dead", "3"] and "HTTP 410 from" in line for line in lines)
    assert any(line.split()[:1] == ["1"] and "1.5 s" in line and "done" in line for line in lines)
    assert any(
        "ep-c2" in line and "410" in line and "41 ms" in line and "HTTP 410 Gone" in line for line in lines
    )
    assert all(len(line) <= WIDTH for line in lines)


def test_show_of_a_plain_job_asks_for_no_children_or_deliveries(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    dead = {**summary("j-1", lastError="SES: MessageRejected"), "history": []}
    api.script("/v1/jobs/j-1", _json(dead))

    code, out, _ = offload(capsys, *against(api, "show", "j-1"))

    assert code == ExitCode.OK
    assert "  last error    SES: MessageRejected" in out.splitlines()
    assert "attempts (oldest first)\n  none yet" in out
    assert [r.path for r in api.requests] == ["/v1/jobs/j-1"]


def test_show_of_a_missing_job_is_one_line_and_exit_4(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    api.script("/v1/jobs/nope", _error(404, "not_found", "no job nope"))

    code, out, err = offload(capsys, *against(api, "show", "nope"))

    assert (code, out) == (ExitCode.REFUSED, "")
    assert one_line(err) == "offload: GET /v1/jobs/nope answered 404: not_found: no job nope\n"


def test_deliveries_pages_the_log_into_a_table(capsys: pytest.CaptureFixture[str], api: Receiver) -> None:
    api.script(
        "/v1/jobs/p-1/deliveries?limit=3", _page("deliveries", [_delivery(1, None, "timed out")], "d1")
    )
    api.script(
        "/v1/jobs/p-1/deliveries?limit=2&cursor=d1",
        _page("deliveries", [_delivery(2, 200, None), _delivery(3, 200, None)], "d2"),
    )

    code, out, _ = offload(capsys, *against(api, "deliveries", "p-1", "--limit", "3"))

    assert code == ExitCode.OK
    header, *rows = out.splitlines()
    assert header.split()[:2] == ["WHEN", "ENDPOINT"]
    assert [row.split()[3] for row in rows] == ["1", "2", "3"]
    assert rows[0].split()[:7] == ["1m", "ago", "ep-c2", "1", "failed", "-", "41"]
    assert rows[0].endswith("timed out")
    assert rows[1].endswith("ok")
    assert len(api.requests) == 2  # the limit reached, the third page is never asked for


def test_a_submit_the_api_refuses_with_429_is_sent_again_with_the_same_idempotency_key(
    capsys: pytest.CaptureFixture[str], api: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen to fail with the CLI sending no key of its own (the repeat could have made a second job)."""
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    limited = Reply(
        429,
        {"content-type": "application/json", "Retry-After": "0"},
        b'{"error": {"code": "rate_limited", "message": "slow down"}}',
    )
    api.script("/v1/jobs", limited, _json({"jobId": "j-1", "status": "pending"}, 202))

    code, out, _ = offload(capsys, *against(api, "submit", "send_email", "--payload", "{}"))

    assert code == ExitCode.OK
    assert json.loads(out)["jobId"] == "j-1"
    keys = [request.headers.get("idempotency-key") for request in api.to("/v1/jobs")]
    assert len(keys) == 2
    assert keys[0]
    assert keys[0] == keys[1]


def test_event_sends_its_name_and_data_and_a_refusal_is_one_line(
    capsys: pytest.CaptureFixture[str], api: Receiver
) -> None:
    """Broken line: `event`'s body without `data` (the workflow would get None)."""
    api.script(
        "/v1/jobs/w-1/events",
        _json({"jobId": "w-1", "name": "converted"}, 202),
        _error(409, "not_waiting", "job w-1 is done, not waiting for event 'converted'"),
    )

    code, out, err = offload(capsys, *against(api, "event", "w-1", "converted", "--data", '{"plan": "pro"}'))

    assert (code, err) == (ExitCode.OK, "")
    assert out.splitlines() == ["w-1  event converted delivered"]
    assert json.loads(api.requests[0].body) == {"name": "converted", "data": {"plan": "pro"}}
    code, _, err = offload(capsys, *against(api, "event", "w-1", "converted"))
    assert code == ExitCode.REFUSED
    assert "not waiting for event 'converted'" in one_line(err)
