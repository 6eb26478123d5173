"""The four functions: runtime, packaging, roles, environment and what each one may do."""

from typing import Any

import pytest

from infra.environment import FunctionEnvironmentError, environment_for
from infra.functions import SPECS, FunctionSpec
from infra.synth import synthesize
from lambdas import config
from lambdas.models.settings import Environment, setting
from tests.infra.cfn import concrete, function, grants, render, resources, role_statements
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")

ENTRY_POINTS = tuple(spec.entry_point for spec in SPECS)
POWERTOOLS = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}


def _props(template: dict[str, Any], entry_point: str) -> dict[str, Any]:
    return function(template, entry_point)[1]["Properties"]


def _env(template: dict[str, Any], entry_point: str) -> dict[str, Any]:
    variables: dict[str, Any] = _props(template, entry_point)["Environment"]["Variables"]
    return variables


def _grants(template: dict[str, Any], entry_point: str) -> set[tuple[str, str]]:
    return grants(role_statements(template, _props(template, entry_point)["Role"]))


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_function_runs_python_3_14_on_arm64_with_tracing(template: dict[str, Any], entry_point: str) -> None:
    props = _props(template, entry_point)
    assert props["Runtime"] == "python3.14"
    assert props["Architectures"] == ["arm64"]
    assert props["TracingConfig"] == {"Mode": "Active"}
    env = _env(template, entry_point)
    assert env["POWERTOOLS_SERVICE_NAME"] == config.SERVICE_NAME
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == config.METRICS_NAMESPACE
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_function_logs_to_its_own_log_group_with_retention(
    template: dict[str, Any], entry_point: str
) -> None:
    log_group_id = _props(template, entry_point)["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = template["Resources"][log_group_id]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == 30
    assert ("logs:PutLogEvents", f"Arn({log_group_id})") in _grants(template, entry_point)


def test_all_functions_share_one_code_asset(template: dict[str, Any]) -> None:
    codes = [r["Properties"]["Code"] for r in resources(template, "AWS::Lambda::Function").values()]
    # One worker per group: the shared one and process_file's.
    assert len(codes) == len(ENTRY_POINTS) + 1
    assert all(code == codes[0] for code in codes)
    assert codes[0]["S3Key"].endswith(".zip")


def test_each_function_has_its_own_role_without_managed_policies(template: dict[str, Any]) -> None:
    roles = [_props(template, entry_point)["Role"]["Fn::GetAtt"][0] for entry_point in ENTRY_POINTS]
    assert len(set(roles)) == len(ENTRY_POINTS)
    for role_id in roles:
        role = template["Resources"][role_id]["Properties"]
        assert "ManagedPolicyArns" not in role
        (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "lambda.amazonaws.com"}


def test_timeouts(template: dict[str, Any]) -> None:
    assert _props(template, "worker")["Timeout"] == config.WORKER_TIMEOUT_SECONDS
    assert _props(template, "recovery")["Timeout"] == config.RECOVERY_TIMEOUT_SECONDS
    # API Gateway gives up after 29 s.
    assert _props(template, "api")["Timeout"] < 29


def _stack_variables() -> set[str]:
    """Every variable the stack can set: lambdas.config's ENV_ names but the local runtime's own and
    the one Lambda sets itself (the function's memory)."""
    names = {value for name, value in vars(config).items() if name.startswith("ENV_")}
    return names - {config.ENV_WEBHOOK_ALLOW_LOOPBACK, config.ENV_FUNCTION_MEMORY_MB}


def _declared(spec: FunctionSpec, *, required: bool = False) -> set[str]:
    return {
        variable.name
        for model in spec.settings
        for variable in model.variables()
        if variable.required or not required
    }


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.entry_point)
def test_environment_is_what_the_settings_models_declare(
    template: dict[str, Any], spec: FunctionSpec
) -> None:
    env = _env(template, spec.entry_point)
    assert _declared(spec, required=True) <= set(env)
    # Set only when there is something to say: the stack's job packages, its types' settings and secrets;
    # and the callers' variable of the default mode: IAM_CALLERS replaces OPERATOR_KEY_ID with auth=iam
    # (tests/infra/test_iam_auth.py); a worker's durable function, when its group has workflow types
    # (tests/infra/test_workflows.py).
    unsaid = {
        config.ENV_WORKFLOW_FUNCTION,
        config.ENV_JOB_PACKAGES,
        config.ENV_JOB_SETTINGS,
        config.ENV_JOB_SECRETS,
        config.ENV_IAM_CALLERS,
    }
    assert set(env) == POWERTOOLS | (_declared(spec) & _stack_variables() - unsaid)
    # The function will accept it: its settings load from exactly this environment.
    resolved = {name: concrete(name, value) for name, value in env.items()}
    for model in spec.settings:
        model.load(resolved)


@pytest.mark.parametrize(
    ("variable", "resource"),
    [
        (config.ENV_JOBS_TABLE, "Ref(TablesJobsTable"),
        (config.ENV_DELIVERIES_TABLE, "Ref(TablesDeliveriesTable"),
        (config.ENV_QUEUE_URL, "Ref(QueuesQueue"),
        (config.ENV_DLQ_URL, "Ref(QueuesDeadLetterQueue"),
        (config.ENV_UPLOADS_BUCKET, "Ref(StorageUploadsBucket"),
        (config.ENV_WEBHOOK_SECRET_ARN, "Ref(StorageWebhookSigningSecret"),
        (config.ENV_ALERTS_TOPIC_ARN, "Ref(AlertsAlertsTopic"),
        (config.ENV_OPERATOR_KEY_ID, "Ref(ApiKeysOperator"),
    ],
)
def test_resource_names_point_at_the_stacks_resources(
    template: dict[str, Any], variable: str, resource: str
) -> None:
    values = {
        render(env[variable])
        for env in (_env(template, entry_point) for entry_point in ENTRY_POINTS)
        if variable in env
    }
    assert values
    assert all(value.startswith(resource) for value in values)


def test_defaults_reach_the_functions(template: dict[str, Any]) -> None:
    everywhere: dict[str, Any] = {}
    for entry_point in ENTRY_POINTS:
        everywhere.update(_env(template, entry_point))
    assert everywhere[config.ENV_STATUS_SHARDS] == str(config.STATUS_SHARDS)
    assert everywhere[config.ENV_FINISHED_TTL_DAYS] == str(config.FINISHED_TTL_DAYS)
    assert everywhere[config.ENV_SENDER_EMAIL] == "no-reply@example.com"
    assert everywhere[config.ENV_BACKOFF_BASE_SECONDS] == str(config.BACKOFF_BASE_SECONDS)
    assert everywhere[config.ENV_BACKOFF_CAP_SECONDS] == str(config.BACKOFF_CAP_SECONDS)
    assert everywhere[config.ENV_LEASE_SECONDS] == str(config.LEASE_SECONDS)
    assert everywhere[config.ENV_WORKER_CONCURRENCY] == str(config.WORKER_CONCURRENCY)
    assert everywhere[config.ENV_RECOVERY_GRACE_SECONDS] == str(config.RECOVERY_GRACE_SECONDS)
    assert everywhere[config.ENV_THUMBNAIL_SIZES] == ",".join(map(str, config.THUMBNAIL_SIZES))
    assert everywhere[config.ENV_MAX_FILE_BYTES] == str(config.MAX_FILE_BYTES)
    assert everywhere[config.ENV_ALLOW_HTTP_WEBHOOKS] == "false"


def test_submission_checks_and_the_worker_read_the_same_limits(template: dict[str, Any]) -> None:
    # An http:// webhook refused at submission but allowed at delivery (or the reverse) would make
    # allowHttpWebhooks half work; so would a file size limit that differs.
    api, worker = _env(template, "api"), _env(template, "worker")
    shared = (set(api) & set(worker)) - POWERTOOLS
    assert {config.ENV_MAX_FILE_BYTES, config.ENV_ALLOW_HTTP_WEBHOOKS} <= shared
    assert all(api[name] == worker[name] for name in shared)


class _NeedsSomethingUnknown(Environment):
    table: str = setting(config.ENV_JOBS_TABLE)
    unknown: str = setting("NOT_A_STACK_VALUE")
    optional: str = setting("ALSO_UNKNOWN", default="x")


def test_a_required_variable_the_stack_cannot_set_fails_the_synth() -> None:
    with pytest.raises(FunctionEnvironmentError, match="requires NOT_A_STACK_VALUE"):
        environment_for([_NeedsSomethingUnknown], {config.ENV_JOBS_TABLE: "jobs"})
    assert environment_for(
        [_NeedsSomethingUnknown], {config.ENV_JOBS_TABLE: "jobs", "NOT_A_STACK_VALUE": "v"}
    ) == {config.ENV_JOBS_TABLE: "jobs", "NOT_A_STACK_VALUE": "v"}


def test_a_value_the_function_would_refuse_fails_the_synth() -> None:
    # A size the worker would reject at cold start is refused at synth: the context check now applies
    # the same bound (lambdas.config), before the environment check would.
    with pytest.raises(ValueError, match="thumbnailSizes"):
        synthesize({"thumbnailSizes": "8"})


def test_worker_environment_follows_context(custom_template: dict[str, Any]) -> None:
    env = _env(custom_template, "worker")
    assert env[config.ENV_SENDER_EMAIL] == CUSTOM_CONTEXT["senderEmail"]
    assert env[config.ENV_BACKOFF_BASE_SECONDS] == str(CUSTOM_CONTEXT["backoffBaseSeconds"])
    assert env[config.ENV_BACKOFF_CAP_SECONDS] == str(CUSTOM_CONTEXT["backoffCapSeconds"])
    assert env[config.ENV_THUMBNAIL_SIZES] == "64,256,1024"
    assert env[config.ENV_ALLOW_HTTP_WEBHOOKS] == "true"
    assert _env(custom_template, "api")[config.ENV_ALLOW_HTTP_WEBHOOKS] == "true"


def test_worker_may_send_email_only_as_the_sender(template: dict[str, Any]) -> None:
    statements = role_statements(template, _props(template, "worker")["Role"])
    (ses,) = [s for s in statements if s["Action"] == "ses:SendEmail"]
    assert ses["Condition"] == {"StringEquals": {"ses:FromAddress": "no-reply@example.com"}}
    identities = sorted(render(r) for r in ses["Resource"])
    assert [i.rsplit(":", 1)[1] for i in identities] == [
        "identity/example.com",
        "identity/no-reply@example.com",
    ]
    assert all(":ses:Ref(AWS::Region):Ref(AWS::AccountId):identity/" in i for i in identities)
