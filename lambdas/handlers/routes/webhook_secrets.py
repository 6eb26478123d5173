"""The webhook signing secrets: a key reads its own (`GET /webhook-secret`), the operator any client's
(`?client=`), and the operator alone rotates one (`POST /webhook-secret/rotate`)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from lambdas.handlers.rest.openapi import REFUSED_CALLER, responses
from lambdas.handlers.rest.services import ApiSecrets, RequestCaller
from lambdas.lifecycle.requests.webhook_secrets import client_of, require_operator
from lambdas.models.webhook_secrets import CLIENT_PATTERN, RotateSecretRequest, WebhookSecretView

router = Router()

_OTHER_CLIENT = (
    403,
    f"{REFUSED_CALLER}, or a client's key naming another client.",
)
_OPERATOR_ONLY = (
    403,
    f"{REFUSED_CALLER}, or a client's key: rotation is the operator's.",
)


@router.get(
    "/webhook-secret",
    summary="A webhook signing secret",
    description=(
        "The `whsec_...` secret the caller's receivers verify its events with (made on first use). The "
        "operator may name any client by its API key id, or with IAM callers its name (`client`)."
    ),
    responses=responses(200, "The secret", WebhookSecretView, 400, _OTHER_CLIENT),
)
def get_webhook_secret(
    caller: RequestCaller,
    secrets: ApiSecrets,
    client: Annotated[
        str | None,
        Query(
            pattern=CLIENT_PATTERN,
            description="A client's API key id, or with IAM callers its name (operator only).",
        ),
    ] = None,
) -> WebhookSecretView:
    found, now = secrets.of(client_of(caller, client)), secrets.now()
    return WebhookSecretView.of(found, now, secrets.signs_with_stack_wide(found, now))


@router.post(
    "/webhook-secret/rotate",
    summary="Rotate a client's webhook secret (operator)",
    description=(
        "A new current secret for the client; the replaced one keeps signing beside it for 24 hours, so "
        "its receivers can switch to the new one in that time."
    ),
    responses=responses(
        200,
        "Rotated",
        WebhookSecretView,
        400,
        _OPERATOR_ONLY,
        (409, "Other rotations of the same client kept changing it (`concurrent_rotation`): try again."),
    ),
)
def rotate_webhook_secret(
    request: RotateSecretRequest, caller: RequestCaller, secrets: ApiSecrets
) -> WebhookSecretView:
    require_operator(caller)
    rotated, now = secrets.rotate(request.client), secrets.now()
    return WebhookSecretView.of(rotated, now, secrets.signs_with_stack_wide(rotated, now))
