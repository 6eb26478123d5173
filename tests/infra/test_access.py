"""Least privilege: each role holds exactly its row of the access table, which docs/internals/security.md shows.

The actions are read back from the synthesized template (every policy attached to the role), and each
resource is recognised by what it is; a grant on anything else, or one action more or less, fails.
"""

from pathlib import Path
from typing import Any

import pytest

from infra.access import ACCESS, CAPABILITIES, Need, Resource, markdown_table, worker_access
from infra.bundling import REPO_ROOT
from infra.synth import synthesize
from lambdas.jobs.base import Capability
from tests.infra.access_rows import SHARED_BUILT_IN_NEEDS, expected_row, role_access
from tests.infra.cfn import function, functions
from tests.support.user_package import type_module, write_package

pytestmark = pytest.mark.xdist_group("infra-template")

DESIGN_DOC = REPO_ROOT / "docs" / "internals" / "security.md"


@pytest.mark.parametrize("entry_point", list(ACCESS))
def test_each_role_holds_exactly_its_row_of_the_access_table(
    template: dict[str, Any], entry_point: str
) -> None:
    """The api without the stack-wide signing secret: seen to fail with `Need.SHARED_SIGNING_SECRET`
    granted whatever the upgrade flag (`_access`'s `if spec is API and shared_secret`)."""
    assert role_access(template, entry_point) == expected_row(entry_point)


def _holds(*needs: Capability | Need) -> dict[Resource, set[str]]:
    return {resource: set(actions) for resource, actions in worker_access(needs).items()}


def test_the_shared_worker_holds_what_its_built_in_types_declare(template: dict[str, Any]) -> None:
    """send_email (email, a limit), webhook_delivery (signing, the delivery log, a limit), webhook_fanout
    (children), and the ops jobs; nothing of uploads, results or any secret. Seen to fail with
    webhook_fanout's `uses` emptied (no BatchWriteItem, no other queues)."""
    expected = _holds(*SHARED_BUILT_IN_NEEDS)
    assert role_access(template, "worker") == expected


def test_process_files_worker_reads_uploads_and_writes_results_and_nothing_else(
    template: dict[str, Any],
) -> None:
    """The worker that decodes untrusted images: no signing secrets, no mail, no delivery log, no
    BatchWriteItem. Seen to fail with every group granted the shared worker's needs."""
    groups = [props for lid, props in functions(template, "worker") if lid != function(template, "worker")[0]]
    assert len(groups) == 1
    assert role_access(template, "worker", groups[0]["Properties"]) == _holds(
        Capability.UPLOADS, Capability.RESULTS
    )


def test_no_action_is_a_wildcard() -> None:
    rows = [*ACCESS.values(), *CAPABILITIES.values()]
    actions = [action for access in rows for group in access.values() for action in group]
    assert not [action for action in actions if "*" in action]


def test_the_security_page_shows_the_access_table() -> None:
    assert markdown_table() in Path(DESIGN_DOC).read_text(), (
        "docs/internals/security.md's access table differs from infra/access.py: paste markdown_table()'s output"
    )


@pytest.fixture(scope="module")
def declared_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A user's package of three types, each in a worker function of its own: one declaring nothing,
    one sending email, one with a secret."""
    package = write_package(
        tmp_path_factory.mktemp("declared"),
        {
            "plain": type_module("plain", 31),
            "mailer": type_module("mailer", 32, "Capability.EMAIL"),
            "tokened": type_module("tokened", 33, secrets=("api_token",)),
        },
    )
    return synthesize({"jobPackages": [str(package)]})


@pytest.mark.parametrize(
    ("job_type", "needs"),
    [("plain", ()), ("mailer", (Capability.EMAIL,)), ("tokened", (Need.SECRETS,))],
)
def test_a_user_types_worker_holds_what_it_declares_and_nothing_more(
    declared_template: dict[str, Any], job_type: str, needs: tuple[Capability | Need, ...]
) -> None:
    """A type that declares nothing runs in a function that can only claim and end its jobs and use its
    queue. Seen to fail on the worker row every group held before declarations (signing secrets, mail,
    uploads, results, BatchWriteItem on the jobs table)."""
    (props,) = [
        props["Properties"]
        for _, props in functions(declared_template, "worker")
        if props["Properties"]["Description"].endswith(f"runs {job_type} from its own queue")
    ]
    assert role_access(declared_template, "worker", props) == _holds(*needs)


@pytest.fixture(scope="module")
def upgraded_template() -> dict[str, Any]:
    return synthesize({"clientKeys": "alpha,beta", "webhookSecretsStartShared": "alpha"})


def test_only_while_clients_share_may_the_api_and_the_signing_worker_read_the_stack_wide_secret(
    template: dict[str, Any], upgraded_template: dict[str, Any]
) -> None:
    """Without the upgrade list no role reads it (the exact rows above); with it, the api and the worker
    that signs, and no other. Seen to fail with `shared_secret` granted whatever the list."""
    api = role_access(upgraded_template, "api")
    assert api == {**expected_row("api"), Resource.SIGNING_SECRET: {"secretsmanager:GetSecretValue"}}
    assert Resource.SIGNING_SECRET in role_access(upgraded_template, "worker")
    (group,) = [
        p
        for lid, p in functions(upgraded_template, "worker")
        if lid != function(upgraded_template, "worker")[0]
    ]
    assert Resource.SIGNING_SECRET not in role_access(upgraded_template, "worker", group["Properties"])
    # the functions are told the owner ids of the named clients: alpha's key id, not beta's
    env = function(upgraded_template, "api")[1]["Properties"]["Environment"]["Variables"]
    (alpha,) = [lid for lid in upgraded_template["Resources"] if lid.startswith("ApiKeysClientAlpha")]
    assert env["WEBHOOK_SECRETS_START_SHARED"] == {"Ref": alpha}
