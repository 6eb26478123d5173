"""The console in a real browser (Playwright driving Debian's chromium) against the local runtime.

Each test watches the page: a JavaScript dialog (what `<img src=x onerror=alert(1)>` would open), an
uncaught error or a Content-Security-Policy refusal fails it. The overview test writes the README's
screenshot, docs/console.png.
"""

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Browser, Page, expect, sync_playwright

from local_runtime.runtime import LocalRuntime
from tests.e2e.conftest import Client
from tests.support.browser import MISSING, find_chromium

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]

_ROOT = Path(__file__).resolve().parents[2]
# Every run writes the overview's screenshot; `make screenshot` writes it over the README's copy in docs/,
# so an everyday `make test` leaves the working tree clean.
SCREENSHOT = (
    _ROOT / ("docs" if os.environ.get("OFFLOAD_UPDATE_SCREENSHOT") == "1" else ".local") / "console.png"
)
XSS = "<img src=x onerror=alert(1)>"
# The jobs list refreshes every 5 s and a job page every 3 s: what a test waits for appears by then.
SEEN_WITHIN_MS = 20_000
expect.set_options(timeout=SEEN_WITHIN_MS)


@dataclass
class Console:
    page: Page
    url: str
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def open(self, fragment: str = "") -> None:
        self.page.goto(f"{self.url}{fragment}")

    def sign_in(self, key: str) -> None:
        self.open()
        self.page.get_by_label("API key").fill(key)
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_role("heading", name="Overview")).to_be_visible()

    def status(self) -> str:
        return self.page.locator(".summary .status").inner_text()

    def confirm(self, action: str) -> None:
        self.page.get_by_role("dialog").get_by_role("button", name=action).click()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        pytest.fail(MISSING)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable)
        yield launched
        launched.close()


def printed_console_url(runtime: LocalRuntime) -> str:
    """The console's URL as `make run` prints it."""
    (line,) = [
        line.split() for line in runtime.banner(1.0).splitlines() if line.strip().startswith("Console ")
    ]
    return line[1]


@pytest.fixture
def console(browser: Browser, runtime: LocalRuntime) -> Iterator[Console]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(SEEN_WITHIN_MS)
    watched = Console(page, printed_console_url(runtime))
    page.on("dialog", lambda dialog: (watched.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: watched.errors.append(f"uncaught: {error}"))
    # Chrome reports a refused fetch or a CSP violation on the console; an API error answer is expected.
    page.on(
        "console",
        lambda message: (
            watched.errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield watched
    context.close()
    assert watched.dialogs == []
    assert watched.errors == []


def key_of(runtime: LocalRuntime, role: str, name: str | None = None) -> str:
    return next(k.value for k in runtime.keys if k.role == role and (name is None or k.name == name))


def as_key(client: Client, key: str) -> Client:
    """The same runtime, called with another key."""

    class Keyed(Client):
        @property
        def headers(self) -> dict[str, str]:
            return {"x-api-key": key}

    return Keyed(client.runtime)


def test_sign_in_shows_the_overview_and_keeps_the_key_out_of_the_url(
    console: Console, runtime: LocalRuntime, client: Client
) -> None:
    # given jobs in several states (the screenshot shows them)
    operator = as_key(client, key_of(runtime, "operator"))
    finishing = [operator.submit("test_echo", {"value": f"job {n}"}) for n in range(6)]
    finishing += [
        operator.submit("test_permanent", {"value": "an input that can never work"}) for _ in range(2)
    ]
    operator.submit("test_echo", {}, delaySeconds=600)
    for job_id in finishing:
        operator.wait_for_status(job_id, {"done", "dead"})
    page = console.page
    console.open()

    # given only a keyboard: the key field has the focus, Enter signs in
    expect(page.get_by_label("API key")).to_be_focused()
    page.keyboard.type(key_of(runtime, "operator"))
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.locator(".card-done .card-count")).not_to_have_text("0")
    expect(page.get_by_role("heading", name="Queues")).to_be_visible()
    # the operator's flow-control limits: the built-in ones at least
    expect(page.get_by_role("heading", name="Limits")).to_be_visible()
    expect(page.get_by_role("rowheader", name="send_email")).to_be_visible()
    expect(page.locator(".chart svg rect.bar-done").first).to_be_attached()
    assert page.evaluate("sessionStorage.getItem('offload.apiKey')") == key_of(runtime, "operator")
    assert key_of(runtime, "operator") not in page.url
    page.screenshot(path=SCREENSHOT)
    assert SCREENSHOT.stat().st_size > 10_000


def test_a_submitted_job_appears_without_losing_the_scroll_position(console: Console, client: Client) -> None:
    for _ in range(6):
        client.submit("test_echo", {})
    page = console.page
    page.set_viewport_size({"width": 1280, "height": 420})
    console.sign_in(client.runtime.api_key)
    console.open("#/jobs")
    expect(page.locator("tbody tr").first).to_be_visible()
    page.mouse.wheel(0, 150)
    # A function, not an expression: an expression is polled through eval, which the CSP forbids.
    page.wait_for_function("() => window.scrollY > 0")
    scrolled = page.evaluate("window.scrollY")

    job_id = client.submit("test_echo", {"value": "new"})

    expect(page.get_by_role("link", name=job_id)).to_be_attached()
    assert page.evaluate("window.scrollY") == scrolled


def test_a_dead_job_shows_why_and_is_retried_to_done(
    console: Console, client: Client, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    job_id = client.submit("test_needs_marker", {"path": str(marker)}, maxAttempts=1)
    client.wait_for_status(job_id, {"dead"})
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open("#/jobs?status=dead")
    page.get_by_role("link", name=job_id).click()

    expect(page.locator(".summary .status")).to_have_text("dead")
    expect(page.locator("section pre.error-text")).to_contain_text("does not exist yet")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    marker.touch()
    page.get_by_role("button", name="Retry").click()
    console.confirm("Retry")

    expect(page.locator(".summary .status")).to_have_text("done")
    assert client.job(job_id)["status"] == "done"


def test_a_delayed_job_is_cancelled_after_a_confirmation(console: Console, client: Client) -> None:
    job_id = client.submit("test_echo", {}, delaySeconds=600)
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open(f"#/jobs/{job_id}")
    expect(page.locator(".summary .status")).to_have_text("pending")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)

    # Escape backs out of the confirmation: nothing happens
    page.get_by_role("button", name="Cancel job").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    assert client.job(job_id)["status"] == "pending"

    page.get_by_role("button", name="Cancel job").click()
    console.confirm("Cancel job")

    expect(page.locator(".summary .status")).to_have_text("cancelled")
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)
    assert client.job(job_id)["status"] == "cancelled"


def test_a_scheduled_job_shows_when_it_starts_and_is_cancelled(console: Console, client: Client) -> None:
    """A job due beyond the 900 s horizon is `scheduled` (issue 22); its page says when it starts, as text,
    and offers Cancel job (allowedActions), not Retry."""
    job_id = client.submit("test_echo", {}, delaySeconds=7200)
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open(f"#/jobs/{job_id}")
    expect(page.locator(".summary .status")).to_have_text("scheduled")
    expect(page.get_by_text("Scheduled: it starts at")).to_be_visible()
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    page.get_by_role("button", name="Cancel job").click()
    console.confirm("Cancel job")
    expect(page.locator(".summary .status")).to_have_text("cancelled")
    assert client.job(job_id)["status"] == "cancelled"


def test_the_job_page_offers_the_actions_the_api_allows_and_no_others(
    console: Console, client: Client
) -> None:
    """The console follows `allowedActions`, not a rule of its own: the same pending job offers Retry
    when the answer says so, and nothing when the answer allows nothing. Seen to fail with
    `allowedActions(job)` in buttons.js deciding from `job.status` again (its old rule)."""
    job_id = client.submit("test_echo", {}, delaySeconds=600)
    page = console.page
    real = client.job(job_id)
    assert real["allowedActions"] == ["cancel"]
    console.sign_in(client.runtime.api_key)
    offered = {"now": ["retry"]}

    def answer_with_the_offer(route: Any) -> None:
        response = route.fetch()
        body = response.json()
        body["allowedActions"] = offered["now"]
        route.fulfill(response=response, json=body)

    page.route(f"**/jobs/{job_id}", answer_with_the_offer)
    console.open(f"#/jobs/{job_id}")
    expect(page.locator(".summary .status")).to_have_text("pending")
    expect(page.get_by_role("button", name="Retry")).to_have_count(1)
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)

    offered["now"] = []
    page.reload()
    expect(page.locator(".summary .status")).to_have_text("pending")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)


def test_markup_in_a_job_is_shown_as_text_and_runs_nothing(console: Console, client: Client) -> None:
    job_id = client.submit("test_permanent", {"value": XSS})
    client.wait_for_status(job_id, {"dead"})
    page = console.page
    console.sign_in(client.runtime.api_key)

    console.open("#/jobs?status=dead")
    expect(page.get_by_role("row").filter(has_text=job_id)).to_contain_text(XSS)
    console.open(f"#/jobs/{job_id}")
    expect(page.locator("pre.json")).to_contain_text(f'"value": "{XSS}"')
    expect(page.locator("section pre.error-text")).to_contain_text(XSS)

    assert page.locator("main img").count() == 0
    time.sleep(1)  # an injected image's error handler would have run by now
    assert console.dialogs == []


def test_a_wrong_key_shows_the_apis_error(console: Console, runtime: LocalRuntime) -> None:
    refused = requests.get(f"{runtime.url}stats", headers={"x-api-key": "not-a-key"}, timeout=30)
    error = refused.json()["error"]
    page = console.page
    console.open()

    page.get_by_label("API key").fill("not-a-key")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("alert")).to_contain_text(
        f"{refused.status_code} {error['code']}: {error['message']}"
    )
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('offload.apiKey')") is None


def test_a_clients_overview_never_asks_for_the_operators_limits(
    console: Console, runtime: LocalRuntime
) -> None:
    """GET /limits is the operator's: a client's overview does not call it (no 403 in the browser's
    console on every refresh), the operator's does. Seen to fail with `limitsOf` asking whatever the
    key (GET /limits requested, answered 403)."""
    page = console.page
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if request.url.endswith("/limits") else None)

    console.sign_in(key_of(runtime, "client", "beta"))
    expect(page.get_by_role("heading", name="Jobs by status")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert asked == []
    expect(page.get_by_role("heading", name="Limits")).to_have_count(0)


def test_a_client_does_not_see_another_clients_job(
    console: Console, runtime: LocalRuntime, client: Client
) -> None:
    alpha = as_key(client, key_of(runtime, "client", "alpha"))
    beta = as_key(client, key_of(runtime, "client", "beta"))
    theirs = alpha.submit("test_echo", {"value": "alpha's"})
    mine = beta.submit("test_echo", {"value": "beta's"})
    page = console.page
    console.sign_in(key_of(runtime, "client", "beta"))

    console.open("#/jobs")
    expect(page.get_by_role("link", name=mine)).to_be_visible()
    expect(page.get_by_role("link", name=theirs)).to_have_count(0)
    console.open(f"#/jobs/{theirs}")
    expect(page.get_by_role("alert")).to_contain_text("404")


def test_retry_all_dead_is_refused_to_a_client_and_started_for_the_operator(
    console: Console, runtime: LocalRuntime, client: Client
) -> None:
    # Filtered by a type that only the console's tests use, so the bulk retry leaves other tests' jobs be.
    operator = as_key(client, key_of(runtime, "operator"))
    operator.wait_for_status(
        operator.submit("test_needs_marker", {"path": "/nowhere"}, maxAttempts=1), {"dead"}
    )
    page = console.page
    console.sign_in(client.runtime.api_key)
    console.open("#/jobs?type=test_needs_marker")
    page.get_by_role("button", name="Retry all dead").click()
    console.confirm("Retry all dead")
    expect(page.get_by_role("alert")).to_contain_text("403 forbidden")
    expect(page.get_by_role("alert")).to_contain_text("operator key")

    page.get_by_role("button", name="Sign out").click()
    console.sign_in(key_of(runtime, "operator"))
    console.open("#/jobs?type=test_needs_marker")
    page.get_by_role("button", name="Retry all dead").click()
    console.confirm("Retry all dead")
    page.get_by_role("status").filter(has_text="Bulk retry started").get_by_role("link").click()

    result = page.locator("section", has=page.get_by_role("heading", name="Result", exact=True))
    expect(result).to_contain_text('"action": "retry"')
    bulk = page.url.rsplit("/", 1)[1]
    finished = operator.wait_for_status(bulk, {"done", "dead"})
    assert finished["status"] == "done"
    assert finished["result"]["finished"]
    assert finished["result"]["applied"] >= 1


@pytest.mark.parametrize("fragment", ["", "#/jobs"])
def test_a_phone_width_screen_scrolls_only_inside_tables(
    console: Console, client: Client, fragment: str
) -> None:
    client.submit("test_permanent", {"value": "a long error message " * 8})
    page = console.page
    page.set_viewport_size({"width": 390, "height": 844})
    console.sign_in(client.runtime.api_key)
    console.open(fragment)
    expect(page.locator("main h2, main table").first).to_be_visible()

    assert page.evaluate("document.documentElement.scrollWidth") <= 390
