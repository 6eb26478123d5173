# ruff: noqa: F811 - the tests take test_console.py's fixtures, imported by name, as parameters
"""Issue 24's week-one papercuts of the console, in a real browser against the local runtime (the
fixtures and the watching of dialogs, errors and CSP refusals are tests/e2e/test_console.py's)."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from local_runtime import demo
from tests.e2e.conftest import Client
from tests.e2e.test_console import Console, browser, console  # noqa: F401 - fixtures

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]


def _fan_out_with_two_dead_deliveries(client: Client, receivers: demo.Receivers) -> str:
    # `/ok` answers 200; a path the receivers do not know answers 404, which is dead at once.
    endpoints = [{"id": name, "url": receivers.url(f"/{name}")} for name in ("ok", "nobody-a", "nobody-b")]
    payload = {"eventType": "demo.ping", "data": {"n": 1}, "endpoints": endpoints}
    job_id = client.submit("webhook_fanout", payload, maxAttempts=1)
    job = client.wait_for_status(job_id, {"done", "dead"})
    assert (job["status"], job["children"]["failed"], job["children"]["total"]) == ("done", 2, 3)
    return job_id


def test_a_done_fan_out_with_dead_deliveries_says_how_many_failed(console: Console, client: Client) -> None:
    """Seen failing (the badge read `done`, green) with `details` (console/static/job.js) showing
    `statusBadge(job.status)` as before."""
    receivers = demo.Receivers()
    try:
        job_id = _fan_out_with_two_dead_deliveries(client, receivers)
    finally:
        receivers.close()
    console.sign_in(client.runtime.api_key)
    console.open(f"#/jobs/{job_id}")

    badge = console.page.locator(".summary .status")
    expect(badge).to_have_text("done, 2 of 3 deliveries failed")
    expect(badge).not_to_have_class("status status-done")


def test_the_jobs_list_links_a_delivery_to_its_fan_out(console: Console, client: Client) -> None:
    """Seen failing (no link in the row) with `jobRow` (console/static/jobs.js) showing the type alone."""
    receivers = demo.Receivers()
    try:
        parent = _fan_out_with_two_dead_deliveries(client, receivers)
    finally:
        receivers.close()
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open("#/jobs?type=webhook_delivery")

    links = page.locator(f'tr td a[href="#/jobs/{parent}"]')
    expect(links).to_have_count(3)
    links.first.click()
    expect(page.get_by_role("heading", name=f"Job {parent}")).to_be_visible()


def test_a_job_done_after_a_retry_shows_no_current_error_and_numbers_its_attempts_as_its_table(
    console: Console, client: Client, tmp_path: Path
) -> None:
    """Seen failing with `summary_fields` (models/api.py) passing `job.last_error` for a done job (the
    "Last error" section and the API's `lastError` stayed), and with the facts' `Attempts` as
    `${job.attempts} of ${job.maxAttempts}` (1 of 1 above a table whose last attempt is #2)."""
    marker = tmp_path / "marker"
    job_id = client.submit("test_needs_marker", {"path": str(marker)}, maxAttempts=1)
    client.wait_for_status(job_id, {"dead"})
    marker.touch()
    assert client.post(f"jobs/{job_id}/retry").status_code == 202
    done = client.wait_for_status(job_id, {"done", "dead"})
    assert done["status"] == "done"
    assert done["lastError"] is None
    assert "does not exist yet" in done["history"][0]["error"]  # the earlier error stays, as history
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open(f"#/jobs/{job_id}")

    expect(page.locator(".summary .status")).to_have_text("done")
    expect(page.get_by_role("heading", name="Last error")).to_have_count(0)
    attempts = page.locator("dl.facts dt:has-text('Attempts') + dd")
    expect(attempts).to_have_text("#2 in all; 1 of 1 since the last retry")
    expect(page.locator("table tbody tr").last.locator("td").first).to_have_text("2")
