"""Fixtures for the stack's tests, next to `template` (tests/conftest.py): that template as an
assertions.Template, and one synthesized with every context key overridden (once per session)."""

from typing import Any

import pytest
from aws_cdk.assertions import Template

# Context that differs from every default, so a test can tell the key reached the template.
CUSTOM_CONTEXT: dict[str, Any] = {
    "alertEmail": "ops@example.org",
    "senderEmail": "jobs@mail.example.org",
    "workerBatchSize": "25",  # the CLI passes -c values as strings
    "workerBatchingWindowSeconds": 20,
    "workerMaxConcurrency": 40,
    "recoveryRateMinutes": 15,
    "backoffBaseSeconds": 3,
    "backoffCapSeconds": 120,
    "thumbnailSizes": "64,256,1024",
    "apiRateLimit": 7,
    "apiBurstLimit": 11,
    "apiQuotaPerDay": 5000,
    "allowHttpWebhooks": "true",
    "clientKeys": "alpha,beta_team",
}


@pytest.fixture(scope="session")
def cfn(template: dict[str, Any]) -> Template:
    return Template.from_json(template)


@pytest.fixture(scope="session")
def custom_template() -> dict[str, Any]:
    from infra.synth import synthesize

    return synthesize(CUSTOM_CONTEXT)


# IAM callers (auth=iam): two clients and an operator role with a path.
IAM_CONTEXT: dict[str, Any] = {
    "auth": "iam",
    "iamClients": {
        "alpha": "arn:aws:iam::111122223333:role/alpha-app",
        "beta": "arn:aws:iam::444455556666:role/beta-worker",
    },
    "iamOperators": "arn:aws:iam::111122223333:role/ops/offload-operator",
}


@pytest.fixture(scope="session")
def iam_template() -> dict[str, Any]:
    from infra.synth import synthesize

    return synthesize(IAM_CONTEXT)
