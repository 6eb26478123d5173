"""The console's files as the api function serves them: known names only, right types, safe by construction.

Called through the real handler with API Gateway's proxy events (no AWS is reached: these routes hold
no data). What the page does in a browser is tested in tests/e2e/test_console.py.
"""

import copy
import re
from typing import Any

import pytest

from lambdas.handlers import api
from lambdas.handlers.console.routes import STATIC
from lambdas.handlers.rest.security import CONTENT_SECURITY_POLICY
from local_runtime.context import LambdaContext
from tests.support.pipeline import load_event

ASSETS = sorted(p.name for p in STATIC.iterdir() if p.name != "index.html")
SCRIPTS = sorted(p for p in STATIC.iterdir() if p.suffix == ".js")


def get(path: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event("api_post_job.json"))
    name = path.removeprefix("/console").lstrip("/")
    event.update(
        httpMethod="GET",
        path=path,
        body=None,
        resource="/console/{file}" if name else "/console",
        pathParameters={"file": name} if name else None,
    )
    event["requestContext"].update(httpMethod="GET", resourcePath=event["resource"])
    response = api.handler(event, LambdaContext(function_name="api"))
    response["headers"] = {k: v[-1] for k, v in (response.get("multiValueHeaders") or {}).items()}
    return response


def test_the_page_is_html_that_loads_only_its_own_files() -> None:
    response = get("/console")
    assert response["statusCode"] == 200
    assert response["headers"]["Content-Type"] == "text/html; charset=utf-8"
    page = response["body"]
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources
    assert all(re.fullmatch(r"console/[\w.-]+|#[\w/]*", source) for source in sources), sources
    # The CSP forbids inline script and style; the page must not need any.
    assert re.findall(r"<script(?![^>]*\bsrc=)", page) == []
    assert "<style" not in page
    assert re.search(r"\s(style|on\w+)=", page) is None


def test_the_page_with_a_trailing_slash_redirects_to_where_its_links_resolve() -> None:
    response = get("/console/")
    assert response["statusCode"] == 308
    assert response["headers"]["Location"] == "../console"


@pytest.mark.parametrize("name", ASSETS)
def test_each_file_is_served_with_its_content_type(name: str) -> None:
    response = get(f"/console/{name}")
    assert response["statusCode"] == 200
    expected = {"js": "text/javascript", "css": "text/css", "svg": "image/svg+xml"}[name.rsplit(".", 1)[1]]
    assert response["headers"]["Content-Type"].split(";")[0] == expected
    assert response["body"] == (STATIC / name).read_text()


@pytest.mark.parametrize(
    "name",
    ["..%2Froutes.py", "../routes.py", "routes.py", "__init__.py", "index.html", "APP.JS", "app.js%00"],
)
def test_only_the_consoles_own_files_are_served(name: str) -> None:
    response = get(f"/console/{name}")
    assert response["statusCode"] == 404
    assert response["headers"]["Content-Type"] == "application/json"


@pytest.mark.parametrize("path", ["/console", "/console/app.js", "/console/nothing.js"])
def test_every_answer_carries_the_security_headers(path: str) -> None:
    headers = get(path)["headers"]
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_policy_allows_nothing_inline_and_no_other_origin() -> None:
    directives = dict(d.split(" ", 1) for d in CONTENT_SECURITY_POLICY.split("; "))
    assert directives["default-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    for sources in directives.values():
        assert "unsafe-inline" not in sources
        assert "unsafe-eval" not in sources
        assert "*" not in sources
        assert "data:" not in sources


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_script_parses_strings_as_html_or_code(script: Any) -> None:
    source = script.read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in source, f"{script.name} uses {sink}"


def test_the_console_stays_under_150_kb() -> None:
    assert sum(p.stat().st_size for p in STATIC.iterdir()) < 150 * 1024
