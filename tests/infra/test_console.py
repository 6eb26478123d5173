"""The console's methods in the stack: the only ones without an API key, and nothing else is open."""

from typing import Any

import pytest

from tests.infra.test_api import _routes

pytestmark = pytest.mark.xdist_group("infra-template")

CONSOLE_ROUTES = {("GET", "/console"), ("GET", "/console/{file}")}


def test_the_console_is_served_without_an_api_key(template: dict[str, Any]) -> None:
    routes = _routes(template)
    assert set(routes) >= CONSOLE_ROUTES
    assert all(routes[route]["ApiKeyRequired"] is False for route in CONSOLE_ROUTES)


def test_every_other_method_requires_an_api_key(template: dict[str, Any]) -> None:
    data_routes = {
        route: method for route, method in _routes(template).items() if route not in CONSOLE_ROUTES
    }
    assert data_routes
    keyless = sorted(route for route, method in data_routes.items() if method["ApiKeyRequired"] is not True)
    assert keyless == []


def test_a_console_file_is_named_in_the_path_and_checked_by_the_gateway(template: dict[str, Any]) -> None:
    method = _routes(template)[("GET", "/console/{file}")]
    assert method["RequestParameters"] == {"method.request.path.file": True}
    assert "RequestValidatorId" in method
