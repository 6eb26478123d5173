"""Per-client webhook signing secrets, through the api's routes and the worker, with a real receiver on
loopback and the reference verifier (`standardwebhooks`): one client's receiver never verifies another
client's event, a rotated-out secret verifies for 24 h and not after, and a key reads only its own."""

import json

import boto3
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from lambdas import config
from lambdas.lifecycle.attempt.capabilities import SECRET_MAX_AGE_SECONDS
from lambdas.lifecycle.requests.webhook_secrets import WebhookSecrets, new_secret
from lambdas.models import settings
from lambdas.models.webhook_secrets import ClientSecrets
from lambdas.store.webhook_secrets import WebhookSecretStore
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.usefixtures("loopback_webhooks")

ALPHA = "alphakeyid1"
BETA = "betakeyid22"


def _secret(stack, api_key_id: str, client: str | None = None) -> dict:
    path = "/webhook-secret" + (f"?client={client}" if client else "")
    response = stack.pipeline.request("GET", path, api_key_id=api_key_id)
    assert response.status == 200, response.body
    return dict(response.body)


def _operator(stack) -> str:
    return stack.pipeline.env[config.ENV_OPERATOR_KEY_ID]


def _fan_out(stack, receiver: Receiver, api_key_id: str, path: str):
    stack.pipeline.submit(
        "webhook_fanout",
        {
            "eventType": "invoice.paid",
            "data": {"amount": 4200},
            "endpoints": [{"id": "ep", "url": receiver.url(path)}],
        },
        api_key_id=api_key_id,
    )
    stack.pipeline.drain()
    [request] = receiver.to(path)
    return request


def test_a_receiver_configured_with_alphas_secret_refuses_betas_event(stack, receiver):
    """The forgery of issue 19: beta fans `invoice.paid` out to alpha's receiver. Seen to fail (beta's event
    verified with alpha's secret) with `ClientSecretsCache.signing` reading one fixed client's secrets
    whatever the job's owner (`self._secrets.of("stack")`), as the one stack-wide secret did."""
    alpha = _secret(stack, ALPHA)
    beta = _secret(stack, BETA)
    assert alpha["client"] == ALPHA
    assert alpha["secret"] != beta["secret"]

    forged = _fan_out(stack, receiver, BETA, "/alpha/hooks")
    with pytest.raises(WebhookVerificationError):
        Webhook(alpha["secret"]).verify(forged.body, forged.headers)
    event = Webhook(beta["secret"]).verify(forged.body, forged.headers)
    assert event["client"] == BETA  # who submitted it is part of what is signed

    genuine = _fan_out(stack, receiver, ALPHA, "/alpha/genuine")
    assert Webhook(alpha["secret"]).verify(genuine.body, genuine.headers)["client"] == ALPHA


def test_a_rotated_out_secret_verifies_for_24_hours_and_not_after(stack, receiver, clock):
    """Seen to fail: with `rotate` keeping no previous secret (`previous=()`), the old receiver refuses
    at once; with `ClientSecrets.still_valid` ignoring `valid_until`, it still verifies after 24 h;
    with the store's `_from_item` reading no `rotatedAt` (GET says never rotated; sample 581628's
    `x__from_item__mutmut_1`); and with `rotate` keeping the clock's fraction of a second (the rotation
    answered `rotatedAt` to the millisecond, a later GET in whole seconds)."""
    clock.advance(0.625)
    old = _secret(stack, ALPHA)["secret"]
    rotated = stack.pipeline.request(
        "POST", "/webhook-secret/rotate", {"client": ALPHA}, api_key_id=_operator(stack)
    )
    assert rotated.status == 200, rotated.body
    new = rotated.body["secret"]
    assert new != old
    assert rotated.body["client"] == ALPHA
    assert rotated.body["rotatedAt"] is not None
    assert rotated.body["previousValidUntil"] is not None
    read_back = _secret(stack, ALPHA)
    assert read_back["secret"] == new
    assert read_back["rotatedAt"] == rotated.body["rotatedAt"]  # the rotation answers what is stored
    assert read_back["previousValidUntil"] == rotated.body["previousValidUntil"]

    clock.advance(config.WEBHOOK_SECRET_OVERLAP_SECONDS - 60)
    within = _fan_out(stack, receiver, ALPHA, "/within")
    assert len(within.headers["webhook-signature"].split(" ")) == 2
    assert Webhook(old).verify(within.body, within.headers)["client"] == ALPHA
    assert Webhook(new).verify(within.body, within.headers)["client"] == ALPHA

    clock.advance(120)
    after = _fan_out(stack, receiver, ALPHA, "/after")
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(after.body, after.headers)
    assert Webhook(new).verify(after.body, after.headers)["client"] == ALPHA
    assert _secret(stack, ALPHA)["previousValidUntil"] is None


def test_a_client_reads_and_rotates_no_other_clients_secret(stack):
    """Seen to fail (200 with alpha's secret) with `client_of` returning `asked` for any caller, and
    (200, a rotation) with `require_operator` doing nothing; and with either refusal's text changed
    (the 403's message: sample 581628's `x_client_of__mutmut_6`, `x_require_operator__mutmut_2`)."""
    alpha = _secret(stack, ALPHA)["secret"]

    read = stack.pipeline.request("GET", f"/webhook-secret?client={ALPHA}", api_key_id=BETA)
    rotate = stack.pipeline.request("POST", "/webhook-secret/rotate", {"client": ALPHA}, api_key_id=BETA)
    own_rotation = stack.pipeline.request("POST", "/webhook-secret/rotate", {"client": BETA}, api_key_id=BETA)

    for refused in (read, rotate, own_rotation):
        assert refused.status == 403
        assert refused.body["error"]["code"] == "forbidden"
        assert alpha not in json.dumps(refused.body)
    assert read.body["error"]["message"] == "a client's key reads its own webhook secret only"
    for refused in (rotate, own_rotation):
        assert refused.body["error"]["message"] == "only the operator's key rotates webhook secrets"
    assert _secret(stack, ALPHA)["secret"] == alpha  # nothing rotated
    # The operator may read any client's.
    assert _secret(stack, _operator(stack), client=ALPHA)["secret"] == alpha


@pytest.mark.parametrize("client", ["", "a/b", "x" * 129, "a b"])
def test_a_malformed_client_is_400(stack, client):
    operator = _operator(stack)
    read = stack.pipeline.request("GET", f"/webhook-secret?client={client}", api_key_id=operator)
    rotate = stack.pipeline.request("POST", "/webhook-secret/rotate", {"client": client}, api_key_id=operator)
    assert (read.status, rotate.status) == (400, 400)
    assert read.body["error"]["code"]
    assert rotate.body["error"]["code"]


def test_an_upgraded_stack_keeps_the_stack_wide_secret_until_the_first_rotation(
    stack, receiver, monkeypatch, clock
):
    """Seen to fail with `webhook_secrets` ignoring `webhook_secrets_start_shared` (a random first secret:
    the receivers of a deployed stack stop verifying at the upgrade)."""
    shared = _upgraded(stack, monkeypatch)

    assert _secret(stack, ALPHA)["secret"] == "whsec_" + shared
    before = _fan_out(stack, receiver, ALPHA, "/before")
    assert Webhook("whsec_" + shared).verify(before.body, before.headers)

    stack.pipeline.request("POST", "/webhook-secret/rotate", {"client": ALPHA}, api_key_id=_operator(stack))
    clock.advance(SECRET_MAX_AGE_SECONDS)  # the worker reads a client's secrets again after this long
    new = _secret(stack, ALPHA)["secret"]
    during = _fan_out(stack, receiver, ALPHA, "/during")
    assert Webhook(new).verify(during.body, during.headers)
    assert Webhook("whsec_" + shared).verify(during.body, during.headers)  # the 24 h overlap


def _upgraded(stack, monkeypatch) -> str:
    """The stack upgraded with ALPHA alone existing before: the stack-wide secret's value."""
    monkeypatch.setenv(config.ENV_WEBHOOK_SECRETS_START_SHARED, ALPHA)
    settings.reset()
    return str(
        boto3.client("secretsmanager").get_secret_value(
            SecretId=stack.pipeline.env[config.ENV_WEBHOOK_SECRET_ARN]
        )["SecretString"]
    )


def test_a_client_the_upgrade_does_not_name_gets_its_own_secret_and_cannot_sign_as_one_that_shares(
    stack, receiver, monkeypatch, clock
):
    """A client onboarded after the upgrade (BETA) forged nothing: its first secret is random, so alpha's
    receiver (holding the stack-wide secret) refuses its event. Seen to fail with `_first` ignoring
    `shared` (every first use got the stack-wide secret, as `webhookSecretsStartShared=true` gave it)."""
    shared = _upgraded(stack, monkeypatch)

    beta = _fan_out(stack, receiver, BETA, "/beta")

    assert _secret(stack, BETA)["secret"] != "whsec_" + shared
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + shared).verify(beta.body, beta.headers)


def test_the_operator_sees_which_clients_still_sign_with_the_stack_wide_secret(stack, monkeypatch, clock):
    """True for a named client until its rotation's overlap ends, false for any other. Seen to fail with
    `signs_with_stack_wide` answering whether the client is named, whatever its secrets."""
    _upgraded(stack, monkeypatch)
    operator = _operator(stack)

    assert _secret(stack, operator, ALPHA)["signsWithStackWideSecret"] is True
    assert _secret(stack, operator, BETA)["signsWithStackWideSecret"] is False
    stack.pipeline.request("POST", "/webhook-secret/rotate", {"client": ALPHA}, api_key_id=operator)
    assert _secret(stack, operator, ALPHA)["signsWithStackWideSecret"] is True  # the 24 h overlap
    clock.advance(config.WEBHOOK_SECRET_OVERLAP_SECONDS)
    assert _secret(stack, operator, ALPHA)["signsWithStackWideSecret"] is False


def test_first_uses_and_rotations_at_the_same_time_keep_one_secret(stack):
    """The store's conditions: a second first write and a rotation over a stale version are refused, and
    the losers read the winner's. Seen to fail with `create`'s condition `attribute_not_exists(#pk)` as
    `attribute_not_exists(#pk) OR attribute_exists(#pk)` (the second first use overwrote the first's
    secret), and `replace`'s `#version = :read` as `... OR #version <> :read` (a stale rotation won)."""
    store = WebhookSecretStore(stack.secrets_table)
    first = ClientSecrets(client=ALPHA, current=new_secret())

    assert store.create(first) is True
    assert store.create(ClientSecrets(client=ALPHA, current=new_secret())) is False
    assert WebhookSecrets(store).of(ALPHA) == first

    rotated = WebhookSecrets(store).rotate(ALPHA)
    stale = ClientSecrets(client=ALPHA, current=new_secret(), version=first.version + 1)
    assert store.replace(stale, first.version) is False  # another rotation wrote version 2 already
    stored = store.get(ALPHA)
    assert stored is not None
    assert (stored.current, stored.version) == (rotated.current, 2)
    assert [old.secret for old in stored.previous] == [first.current]
