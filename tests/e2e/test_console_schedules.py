# ruff: noqa: F811 - the tests take test_console.py's fixtures, imported by name, as parameters
"""Issue 22's schedules page of the console, in a real browser against the local runtime (the fixtures
and the watching of dialogs, errors and CSP refusals are tests/e2e/test_console.py's)."""

import time

import pytest
from playwright.sync_api import expect

from local_runtime.runtime import LocalRuntime
from tests.e2e.conftest import Client
from tests.e2e.test_console import (  # noqa: F401 - fixtures
    XSS,
    Console,
    as_key,
    browser,
    console,
    key_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]

# Once a year (1 January, 00:00 in Paris): no firing of its own comes during a test.
YEARLY = "cron(0 0 1 1 ? *)"


def _create(client: Client, name: str) -> str:
    body = {
        "name": name,
        "expression": YEARLY,
        "timeZone": "Europe/Paris",
        "job": {"type": "test_echo", "payload": {"value": "scheduled"}},
        "overlap": "skip",
    }
    created = client.post("schedules", json=body)
    assert created.status_code == 201, created.text
    schedule_id: str = created.json()["scheduleId"]
    return schedule_id


def test_a_schedule_is_listed_paused_resumed_and_run_now_into_a_job(console: Console, client: Client) -> None:
    """Seen failing (the page's state stayed `enabled`) with the Pause button's PATCH body
    in console/static/schedule.js sending `{ state: 'enabled' }` whatever the state."""
    name = f"nightly report {time.time_ns()}"
    schedule_id = _create(client, name)
    page = console.page
    console.sign_in(client.runtime.api_key)

    # the list, from the nav
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Schedules").click()
    row = page.locator(f'tr[data-schedule-id="{schedule_id}"]')
    expect(row).to_contain_text(YEARLY)
    expect(row).to_contain_text("Europe/Paris")
    expect(row).to_contain_text("enabled")
    expect(row).to_contain_text("skip")
    expect(row.locator("time")).to_have_attribute(
        "datetime", client.get(f"schedules/{schedule_id}").json()["nextFireTimes"][0]
    )

    # its page
    row.get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", name=f"Schedule {name}")).to_be_visible()
    expect(page.locator(".summary .status")).to_have_text("enabled")
    expect(
        page.locator("section", has=page.get_by_role("heading", name="Next firings")).locator("li")
    ).to_have_count(5)
    expect(page.get_by_text("No firings yet.")).to_be_visible()

    # pause: the page and the API say paused, no firing ahead
    page.get_by_role("button", name="Pause").click()
    expect(page.locator(".summary .status")).to_have_text("paused")
    expect(page.get_by_text("None while paused.")).to_be_visible()
    paused = client.get(f"schedules/{schedule_id}").json()
    assert (paused["state"], paused["nextFireTimes"]) == ("paused", [])

    # resume
    page.get_by_role("button", name="Resume").click()
    expect(page.locator(".summary .status")).to_have_text("enabled")
    assert client.get(f"schedules/{schedule_id}").json()["state"] == "enabled"

    # run now: its job appears among the last jobs and links to the job page
    page.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("status").filter(has_text="Run now: job")).to_be_visible()
    (firing,) = client.get(f"schedules/{schedule_id}").json()["lastJobs"]
    last = page.locator("section", has=page.get_by_role("heading", name="Its last jobs"))
    expect(last.locator("tbody tr")).to_have_count(1)
    last.get_by_role("link", name=firing["jobId"]).click()
    expect(page.get_by_role("heading", name=f"Job {firing['jobId']}")).to_be_visible()
    expect(page.locator(".summary .status")).to_have_text("done")


def test_a_schedule_is_deleted_after_a_confirmation(console: Console, client: Client) -> None:
    """Seen failing (Escape deleted it) with Delete's click in console/static/schedule.js calling
    `perform` (no question) instead of `act`."""
    schedule_id = _create(client, "to delete")
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open(f"#/schedules/{schedule_id}")
    expect(page.locator(".summary .status")).to_have_text("enabled")

    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert client.get(f"schedules/{schedule_id}").status_code == 200

    page.get_by_role("button", name="Delete").click()
    console.confirm("Delete schedule")
    expect(page.get_by_role("status").filter(has_text="Deleted: to delete fires no more")).to_be_visible()
    assert client.get(f"schedules/{schedule_id}").status_code == 404
    console.open("#/schedules")
    expect(page.locator(f'tr[data-schedule-id="{schedule_id}"]')).to_have_count(0)


def test_markup_in_a_schedule_name_is_shown_as_text_and_runs_nothing(
    console: Console, client: Client
) -> None:
    """Seen failing (the heading lost the markup, and the CSP's refusal of the injected inline handler
    reached the console) with `scheduleView` (console/static/schedule.js) setting the title's
    `innerHTML` to the name."""
    name = f"report {XSS}"
    schedule_id = _create(client, name)
    page = console.page
    console.sign_in(client.runtime.api_key)

    console.open("#/schedules")
    expect(page.locator(f'tr[data-schedule-id="{schedule_id}"]')).to_contain_text(XSS)
    console.open(f"#/schedules/{schedule_id}")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Schedule {name}")

    assert page.locator("main img").count() == 0
    time.sleep(1)  # an injected image's error handler would have run by now
    assert console.dialogs == []


def test_a_client_does_not_see_another_clients_schedule(
    console: Console, runtime: LocalRuntime, client: Client
) -> None:
    """The API decides (no rule in the page): seen failing (alpha's schedule listed for beta) with GET
    /schedules (lambdas/lifecycle/requests/schedules.py) listing every owner's page for any caller."""
    theirs = _create(as_key(client, key_of(runtime, "client", "alpha")), "alpha's")
    page = console.page
    console.sign_in(key_of(runtime, "client", "beta"))

    console.open("#/schedules")
    expect(page.locator("main h1")).to_have_text("Schedules")
    expect(page.locator("main .state.loading")).to_have_count(0)
    expect(page.locator(f'tr[data-schedule-id="{theirs}"]')).to_have_count(0)
    console.open(f"#/schedules/{theirs}")
    expect(page.get_by_role("alert")).to_contain_text("404")


def _mark_failing(runtime: LocalRuntime, owner: str, schedule_id: str, why: str) -> None:
    """What a tick records when this schedule fails (lambdas/store/schedules.py's fired item)."""
    assert runtime.provisioned is not None
    table = runtime.provisioned.function_env("lambdas.handlers.schedules.handler")["SCHEDULES_TABLE_NAME"]
    runtime.moto.client("dynamodb").put_item(
        TableName=table,
        Item={
            "owner": {"S": owner},
            "scheduleId": {"S": f"{schedule_id}#fired"},
            "lastError": {"S": why},
            "lastErrorAt": {"S": "2026-12-01T00:00:30.000Z"},
        },
    )


def test_the_operator_sees_every_clients_schedules_failing_first_and_pauses_one(
    console: Console, runtime: LocalRuntime, client: Client
) -> None:
    """Issue: no page listed another client's schedules, so a failing one could not be found or stopped.
    Seen failing (beta's calm schedule first) with schedules.js ordering the failing ones last, and (the
    Pause's PATCH a 404) with schedule.js's `ownedPath` leaving out `?client=`."""
    alpha_key = key_of(runtime, "client", "alpha")
    alpha_id = next(k.id for k in runtime.keys if k.value == alpha_key)
    calm = _create(as_key(client, key_of(runtime, "client", "beta")), f"beta's {time.time_ns()}")
    failing = _create(as_key(client, alpha_key), f"alpha's {time.time_ns()}")
    _mark_failing(runtime, alpha_id, failing, "InvalidExpressionError: day-of-week: / belongs elsewhere")
    page = console.page
    console.sign_in(key_of(runtime, "operator"))

    console.open("#/schedules")
    rows = page.locator("main tbody tr")
    expect(page.locator(f'tr[data-schedule-id="{calm}"]')).to_be_visible()
    expect(rows.first).to_have_attribute("data-schedule-id", failing)
    expect(rows.first).to_contain_text(alpha_id)
    expect(rows.first).to_contain_text("failing")

    rows.first.get_by_role("link").click()
    expect(page.locator("main .summary")).to_contain_text("day-of-week: / belongs elsewhere")
    page.get_by_role("button", name="Pause").click()
    expect(page.locator("main .summary .status")).to_contain_text("paused")
    assert as_key(client, alpha_key).get(f"schedules/{failing}").json()["state"] == "paused"
