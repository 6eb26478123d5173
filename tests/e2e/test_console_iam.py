"""The console of a stack with IAM callers (auth=iam): a browser cannot sign with SigV4, so its sign-in
says plainly how to operate the stack instead of showing API Gateway's "Missing Authentication Token"."""

import pytest
from playwright.sync_api import expect, sync_playwright

from local_runtime.runtime import LocalRuntime
from tests.support.browser import MISSING, find_chromium

pytestmark = pytest.mark.slow


def test_signing_in_to_an_iam_stack_says_to_use_the_cli_with_iam(iam_runtime: LocalRuntime) -> None:
    """Seen to fail with app.js's IAM_STACK message left out (the page said `Sign-in failed: 403
    forbidden: Missing Authentication Token`)."""
    executable = find_chromium()
    if executable is None:
        pytest.fail(MISSING)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        try:
            page = browser.new_page()
            page.goto(f"{iam_runtime.url}console")
            page.get_by_label("API key").fill("any-key")
            page.get_by_role("button", name="Sign in").click()

            notice = page.locator(".sign-in .notice")
            expect(notice).to_contain_text("authenticates its callers with IAM (auth=iam)", timeout=15_000)
            expect(notice).to_contain_text("offload --iam")
            expect(notice).not_to_contain_text("Missing Authentication Token")
        finally:
            browser.close()
