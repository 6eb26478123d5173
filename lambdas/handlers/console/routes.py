"""`GET /console` and `GET /console/{file}`: the console's page and the files it loads, from `static/`.

A file is found by its exact name among those the folder holds, so no request can reach outside it
(`..`, an encoded slash or an unknown name are all just names that are not there: 404). The page calls
the API itself with the key the user typed; these routes hold no data and need no key.
"""

from functools import cache
from pathlib import Path
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParameter

from lambdas.handlers.rest.errors import error_response

STATIC: Final = Path(__file__).parent / "static"
PAGE: Final = "index.html"
CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

router = Router()


@cache
def assets() -> dict[str, Path]:
    """What the page loads, by name: the folder's files of a known type, but the page itself (its
    relative links only resolve from `/console`)."""
    return {p.name: p for p in STATIC.iterdir() if p.suffix in CONTENT_TYPES and p.name != PAGE}


def _serve(path: Path) -> Response[Any]:
    return Response(
        status_code=200,
        content_type=CONTENT_TYPES[path.suffix],
        body=path.read_text(encoding="utf-8"),
        # Revalidated on every load, so a deployment is seen at once; the files are small.
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/console", include_in_schema=False)
def console_page() -> Response[Any]:
    # API Gateway and the resolver both take `/console/` for `/console`, but the page's relative links
    # would resolve under it: send the browser to the one URL they work from.
    if router.current_event.path.endswith("/"):
        return Response(status_code=308, headers={"Location": "../console"})
    return _serve(STATIC / PAGE)


@router.get("/console/<file>", include_in_schema=False)
def console_file(file: Annotated[str, PathParameter(min_length=1, max_length=64)]) -> Response[Any]:
    path = assets().get(file)
    if path is None:
        return error_response(404, "not_found", f"the console has no file named {file!r}")
    return _serve(path)
