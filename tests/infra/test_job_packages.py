"""A user's package of job types: found, checked at synth, given its own function, settings and secret.

The package is written to a temporary folder outside the repository (tests/support/user_package.py)
and named in CDK context `jobPackages`, as a user's project names it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra import bundling
from infra.job_types import JobTypeCatalog, JobTypesError
from infra.synth import synthesize
from lambdas import config
from tests.infra.cfn import concrete, function, functions, grants, resources, role_statements
from tests.support.user_package import EXAMPLE_PROJECT, SYNC_CRM, type_module, write_package

CRM_SETTINGS = {"sync_crm": {"crmUrl": "https://crm.example.com/contacts"}}


@pytest.fixture(scope="module")
def crm_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_package(tmp_path_factory.mktemp("user-project"), requirements="requests==2.32.3\n")


@pytest.fixture(scope="module")
def crm_template(crm_package: Path) -> dict[str, Any]:
    return synthesize({"jobPackages": [str(crm_package)], "jobSettings": CRM_SETTINGS})


def _crm_worker(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = [
        f for f in functions(template, "worker") if "sync_crm" in f[1]["Properties"].get("Description", "")
    ]
    return found


def test_a_packages_type_runs_in_its_own_function_with_its_timeout_queue_and_dlq(
    crm_template: dict[str, Any], crm_package: Path
) -> None:
    """Seen to fail with `WorkerFunction` ignored by the grouping (sync_crm in the shared worker)."""
    worker_id, worker = _crm_worker(crm_template)
    props = worker["Properties"]
    assert props["Timeout"] == 120
    variables = props["Environment"]["Variables"]
    assert variables["LEASE_SECONDS"] == "150"
    assert json.loads(variables[config.ENV_JOB_SETTINGS]) == CRM_SETTINGS
    (mapping,) = [
        r["Properties"]
        for r in resources(crm_template, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["FunctionName"] == {"Ref": worker_id}
        and not r["Properties"]["EventSourceArn"]["Fn::GetAtt"][0].startswith("QueuesHighQueue")
    ]
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    assert crm_template["Resources"][queue_id]["Properties"]["VisibilityTimeout"] == 720
    # Every function registers the package, and sends a sync_crm job to that queue.
    for entry_point in ("api", "worker", "recovery"):
        env = function(crm_template, entry_point)[1]["Properties"]["Environment"]["Variables"]
        if entry_point != "recovery":
            assert env[config.ENV_JOB_PACKAGES] == crm_package.name
        routes = json.loads(concrete("queue", env[config.ENV_JOB_QUEUE_URLS]))
        assert set(routes) == {"process_file", "sync_crm"}
        assert {"Ref": queue_id} in env[config.ENV_JOB_QUEUE_URLS]["Fn::Join"][1]


def test_a_declared_secret_is_created_and_only_its_types_function_may_read_it(
    crm_template: dict[str, Any],
) -> None:
    """Least privilege: GetSecretValue on crm_token for sync_crm's worker alone. Seen to fail with the
    secret's grant given to every worker (`secrets.of` over all declared names)."""
    (secret_id,) = [
        lid
        for lid, r in resources(crm_template, "AWS::SecretsManager::Secret").items()
        if {"Key": "offload:job-secret", "Value": "sync_crm/crm_token"} in r["Properties"].get("Tags", [])
    ]
    worker_id, worker = _crm_worker(crm_template)
    env = worker["Properties"]["Environment"]["Variables"]
    assert json.loads(concrete("arn", env[config.ENV_JOB_SECRETS])) == {
        "sync_crm": {"crm_token": "resolved-arn"}
    }
    assert _readers(crm_template, secret_id) == [worker_id]


def _readers(template: dict[str, Any], secret_id: str) -> list[str]:
    """The functions whose role may read the secret."""
    return [
        lid
        for lid, r in resources(template, "AWS::Lambda::Function").items()
        if ("secretsmanager:GetSecretValue", f"Ref({secret_id})")
        in grants(role_statements(template, r["Properties"]["Role"]))
    ]


def test_the_bundle_carries_the_package_and_its_requirements(crm_package: Path, tmp_path: Path) -> None:
    """Seen to fail with the package left out of `copy_package`."""
    catalog = JobTypeCatalog.load([str(crm_package)], CRM_SETTINGS)
    (package,) = catalog.packages
    assert package.requirements == ("requests==2.32.3",)
    command = bundling.pip_command(str(tmp_path), catalog.packages)
    assert "requests==2.32.3" in command
    assert command[command.index("--platform") + 1] == "manylinux2014_aarch64"
    bundling.copy_package(tmp_path, catalog.packages)
    assert (tmp_path / crm_package.name / "sync_crm.py").read_text() == SYNC_CRM
    assert (tmp_path / "lambdas" / "jobs" / "types" / "send_email.py").is_file()
    # The asset changes with the package's code.
    before = bundling.source_hash(catalog.packages)
    (crm_package / "sync_crm.py").write_text(SYNC_CRM + "\n# edited\n")
    try:
        assert bundling.source_hash(catalog.packages) != before
    finally:
        (crm_package / "sync_crm.py").write_text(SYNC_CRM)


BROKEN = "import a_module_nobody_installed\n"
NOT_A_TYPE = "VALUE = 1\n"


@pytest.mark.parametrize(
    ("modules", "settings", "message"),
    [
        ({"sync_crm": SYNC_CRM, "broken": BROKEN}, CRM_SETTINGS, "job type 'broken' .* does not import"),
        (
            {"send_email": SYNC_CRM.replace('"sync_crm"', '"send_email"')},
            {},
            "'send_email' .* a built-in type",
        ),
        (
            {"bulk_action": SYNC_CRM.replace('"sync_crm"', '"bulk_action"')},
            {},
            r"job type 'bulk_action' of crm_jobs_\w+ has the name of offload's own ops job type",
        ),
        (
            {"helper": NOT_A_TYPE},
            {},
            "job type 'helper': .* defines no JOB_TYPE .* name a helper module _helper.py and it is skipped",
        ),
        (
            {"sync_crm": SYNC_CRM},
            {"sync_crm": {"crmUrl": "ftp://nope"}},
            "job type 'sync_crm': invalid jobSettings",
        ),
        ({"sync_crm": SYNC_CRM}, {}, "job type 'sync_crm': invalid jobSettings: crmUrl"),
        (
            {"sync_crm": SYNC_CRM.replace("timeout_seconds=120", "timeout_seconds=901")},
            CRM_SETTINGS,
            "job type 'sync_crm': function timeout_seconds must be 1..900",
        ),
        ({"sync_crm": SYNC_CRM}, {**CRM_SETTINGS, "nobody": {}}, "jobSettings names nobody"),
    ],
    ids=[
        "import",
        "clash",
        "reserved",
        "no-type",
        "bad-setting",
        "missing-setting",
        "timeout",
        "stray-settings",
    ],
)
def test_a_type_the_stack_cannot_run_fails_the_synth_with_its_name(
    tmp_path: Path, modules: dict[str, str], settings: dict[str, Any], message: str
) -> None:
    """Each case seen to fail with its check removed from infra/job_types.py (the synth succeeded); the
    reserved name with `RESERVED` emptied (a user's `bulk_action` synthesized, registered public, and ran
    as the lifecycle's ops job with its operator reach)."""
    package = write_package(tmp_path, modules)
    with pytest.raises(JobTypesError, match=message):
        synthesize({"jobPackages": str(package), "jobSettings": json.dumps(settings)})


def test_a_type_named_like_another_packages_fails_the_synth_naming_both(tmp_path: Path) -> None:
    """Seen to fail with `type_owners`' clash check removed (the second package's sync_crm won)."""
    first = write_package(tmp_path / "a", {"sync_crm": SYNC_CRM})
    second = write_package(tmp_path / "b", {"sync_crm": SYNC_CRM})
    with pytest.raises(JobTypesError) as refused:
        synthesize({"jobPackages": [str(first), str(second)], "jobSettings": json.dumps(CRM_SETTINGS)})
    assert str(refused.value) == (
        f"job type 'sync_crm' of {second.name} has the name of a type of {first.name}"
    )


def test_job_limits_may_name_a_packages_type_and_no_unknown_one(crm_package: Path) -> None:
    """Seen to fail with the catalog's check skipped (an unknown type synthesized) and with the old
    check against the built-in types only (sync_crm refused)."""
    limits = {"sync_crm": {"concurrency": 2, "key": "owner"}}
    context = {"jobPackages": str(crm_package), "jobSettings": json.dumps(CRM_SETTINGS)}
    template = synthesize({**context, "jobLimits": json.dumps(limits)})
    env = _crm_worker(template)[1]["Properties"]["Environment"]["Variables"]
    assert json.loads(env[config.ENV_JOB_LIMITS])["sync_crm"] == limits["sync_crm"]
    with pytest.raises(JobTypesError, match="jobLimits: no job type 'no_such_type'"):
        synthesize({**context, "jobLimits": json.dumps({"no_such_type": {"concurrency": 1}})})


def test_an_installed_distribution_is_found_by_its_entry_point(tmp_path: Path, monkeypatch) -> None:
    """A distribution naming its package in the `offload.job_types` group is found without context, and
    its requirements are its Requires-Dist. Seen to fail with `_entry_point_packages` left out."""
    package = write_package(tmp_path / "site")
    dist = tmp_path / "site" / "crm_jobs-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: crm-jobs\nVersion: 1.0\nRequires-Dist: requests==2.32.3\n"
        'Requires-Dist: pytest; extra == "test"\n'
    )
    (dist / "entry_points.txt").write_text(f"[{config.JOB_TYPES_ENTRY_POINT_GROUP}]\ncrm = {package.name}\n")
    (dist / "top_level.txt").write_text(f"{package.name}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    catalog = JobTypeCatalog.load(settings=CRM_SETTINGS)
    (found,) = catalog.packages
    assert (found.name, found.source) == (package.name, package.resolve())
    assert found.requirements == ("requests==2.32.3",)
    assert "sync_crm" in {t.name for t in catalog.types}


def test_a_referenced_secret_is_granted_not_created(crm_package: Path) -> None:
    arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:crm-token-AbCdEf"
    template = synthesize(
        {
            "jobPackages": [str(crm_package)],
            "jobSettings": CRM_SETTINGS,
            "jobSecrets": {"sync_crm": {"crm_token": arn}},
        }
    )
    assert not [
        r for r in resources(template, "AWS::SecretsManager::Secret").values() if "Tags" in r["Properties"]
    ]
    _, worker = _crm_worker(template)
    assert ("secretsmanager:GetSecretValue", arn) in grants(
        role_statements(template, worker["Properties"]["Role"])
    )


def test_the_template_project_synthesizes_and_its_own_tests_pass(monkeypatch) -> None:
    """examples/user-project as `cdk synth` sees it from its folder (its cdk.json's context), and its
    tests as its owner runs them, so the template cannot rot."""
    project = EXAMPLE_PROJECT
    monkeypatch.chdir(project)
    context = json.loads((project / "cdk.json").read_text())["context"]
    template = synthesize(context)
    assert _crm_worker(template)[1]["Properties"]["Timeout"] == 120
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "tests"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(project), str(bundling.REPO_ROOT)])},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout


def test_two_types_declaring_one_name_get_two_secrets_each_read_by_its_own_function_alone(
    tmp_path: Path,
) -> None:
    """A secret is its type's own, not its name's: before, one secret `a_token` was read by both
    functions. Seen to fail with the tag back to the bare name, and with `JobSecrets.of` granting every
    declared secret (`right`'s function reading `left`'s)."""
    left = write_package(tmp_path / "a", {"left": type_module("left", 41, secrets=("a_token",))})
    right = write_package(tmp_path / "b", {"right": type_module("right", 42, secrets=("a_token",))})
    template = synthesize({"jobPackages": [str(left), str(right)]})
    secrets = {
        tag["Value"]: lid
        for lid, r in resources(template, "AWS::SecretsManager::Secret").items()
        for tag in r["Properties"].get("Tags", [])
        if tag["Key"] == "offload:job-secret"
    }
    assert set(secrets) == {"left/a_token", "right/a_token"}
    for type_name in ("left", "right"):
        ((worker_id, worker),) = [
            f
            for f in functions(template, "worker")
            if f"runs {type_name} " in f[1]["Properties"]["Description"]
        ]
        env = worker["Properties"]["Environment"]["Variables"]
        assert env[config.ENV_JOB_SECRETS]["Fn::Join"][1][1] == {"Ref": secrets[f"{type_name}/a_token"]}
        assert json.loads(concrete("arn", env[config.ENV_JOB_SECRETS])) == {
            type_name: {"a_token": "resolved-arn"}
        }
        assert _readers(template, secrets[f"{type_name}/a_token"]) == [worker_id]
