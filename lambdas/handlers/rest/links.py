"""Absolute links to the API's own resources, as the caller reached it."""

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent


def job_url(event: APIGatewayProxyEvent, job_id: str) -> str:
    """`https://<host>/<stage>/jobs/<id>`: what the caller can follow as is (a relative path drops the stage).

    The base path is whatever the request context's full path holds before the route's path: the stage
    on an execute-api host, a custom domain's base path mapping (or nothing) on a custom domain.
    """
    context = event.request_context
    full_path = context.path or event.path
    base = full_path[: -len(event.path)] if full_path.endswith(event.path) else ""
    host = event.headers.get("host") or context.domain_name
    if not host:
        return f"{base}/jobs/{job_id}"
    # API Gateway always says https here; the local runtime serves plain http and sends no such header.
    scheme = event.headers.get("x-forwarded-proto") or "http"
    return f"{scheme}://{host}{base}/jobs/{job_id}"
