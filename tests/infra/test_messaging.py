"""Queues and what invokes the functions: SQS event sources and the recovery schedule."""

from typing import Any

import pytest

from lambdas import config
from tests.infra.cfn import (
    concrete,
    function,
    functions,
    grants,
    logical_id,
    render,
    resources,
    role_statements,
)
from tests.infra.conftest import CUSTOM_CONTEXT

pytestmark = pytest.mark.xdist_group("infra-template")


def _queue(template: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    queue_id = logical_id(template, "AWS::SQS::Queue", name)
    return queue_id, template["Resources"][queue_id]["Properties"]


def _mappings_of(template: dict[str, Any], function_id: str, high: bool = False) -> list[dict[str, Any]]:
    """The function's mappings: of its queues (or of its high queues, with `high`)."""
    return [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["FunctionName"] == {"Ref": function_id}
        and r["Properties"]["EventSourceArn"]["Fn::GetAtt"][0].startswith("QueuesHighQueue") == high
    ]


def _mapping(template: dict[str, Any], entry_point: str, high: bool = False) -> dict[str, Any]:
    (mapping,) = _mappings_of(template, function(template, entry_point)[0], high)
    return mapping


def _group_worker(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """process_file's worker (the one group besides the shared worker in the default stack)."""
    (found,) = [f for f in functions(template, "worker") if f[0] != function(template, "worker")[0]]
    return found


@pytest.mark.parametrize("name", ["QueuesQueue", "QueuesDeadLetterQueue"])
def test_queue_is_encrypted_and_refuses_plain_http(template: dict[str, Any], name: str) -> None:
    queue_id, queue = _queue(template, name)
    assert queue["SqsManagedSseEnabled"] is True
    (policy,) = [
        p["Properties"]
        for p in resources(template, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue_id}]
    ]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Action"] == "sqs:*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statement["Principal"] == {"AWS": "*"}


def test_main_queue_outlasts_six_worker_timeouts_and_redrives(template: dict[str, Any]) -> None:
    dlq_id, _ = _queue(template, "QueuesDeadLetterQueue")
    _, queue = _queue(template, "QueuesQueue")
    worker_timeout = function(template, "worker")[1]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] == config.VISIBILITY_TIMEOUT_FACTOR * config.WORKER_TIMEOUT_SECONDS
    assert queue["VisibilityTimeout"] >= 6 * worker_timeout
    assert queue["MessageRetentionPeriod"] == config.MAIN_QUEUE_RETENTION_DAYS * 86400
    redrive = queue["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq_id, "Arn"]}
    assert redrive["maxReceiveCount"] == config.MAX_RECEIVE_COUNT
    assert redrive["maxReceiveCount"] >= 5
    # Redrive must never cut a job short of the attempts it may ask for.
    assert redrive["maxReceiveCount"] > config.MAX_ATTEMPTS_LIMIT


def test_dead_letter_queue_keeps_messages_14_days(template: dict[str, Any]) -> None:
    _, dlq = _queue(template, "QueuesDeadLetterQueue")
    assert dlq["MessageRetentionPeriod"] == 14 * 86400
    dead_letter_timeout = function(template, "dead_letter")[1]["Properties"]["Timeout"]
    assert dlq["VisibilityTimeout"] >= 6 * dead_letter_timeout


def test_worker_consumes_the_main_queue_with_partial_batch_failures(template: dict[str, Any]) -> None:
    queue_id, _ = _queue(template, "QueuesQueue")
    mapping = _mapping(template, "worker")
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert mapping["BatchSize"] == config.WORKER_BATCH_SIZE
    assert mapping["MaximumBatchingWindowInSeconds"] == config.WORKER_BATCHING_WINDOW_SECONDS
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": config.WORKER_MAX_CONCURRENCY}


def test_worker_event_source_follows_context(custom_template: dict[str, Any]) -> None:
    mapping = _mapping(custom_template, "worker")
    assert mapping["BatchSize"] == int(CUSTOM_CONTEXT["workerBatchSize"])
    assert mapping["MaximumBatchingWindowInSeconds"] == CUSTOM_CONTEXT["workerBatchingWindowSeconds"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": CUSTOM_CONTEXT["workerMaxConcurrency"]}


def test_dead_letter_function_consumes_every_dlq(template: dict[str, Any]) -> None:
    dlqs = [lid for lid in resources(template, "AWS::SQS::Queue") if "DeadLetterQueue" in lid]
    assert len(dlqs) == 2  # the shared worker's and process_file's worker's
    mappings = _mappings_of(template, function(template, "dead_letter")[0])
    assert sorted(m["EventSourceArn"]["Fn::GetAtt"][0] for m in mappings) == sorted(dlqs)
    for mapping in mappings:
        assert mapping["BatchSize"] == config.DLQ_BATCH_SIZE == 5
        assert mapping["MaximumBatchingWindowInSeconds"] == config.DLQ_BATCHING_WINDOW_SECONDS == 30
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_no_other_function_is_driven_by_a_queue(template: dict[str, Any]) -> None:
    # Each worker its queue and its high queue, the dead-letter function every DLQ: two workers, six.
    assert len(resources(template, "AWS::Lambda::EventSourceMapping")) == 6


def test_a_group_worker_has_its_own_queue_visibility_and_lease_from_its_timeout(
    template: dict[str, Any],
) -> None:
    """process_file runs in a worker of its own: 180 s, a queue whose visibility is six times that and
    which redrives to its own DLQ, a lease 30 s longer. Seen to fail with the queue's visibility taken
    from the shared worker's timeout (360 s)."""
    from lambdas.jobs.types.process_file import PROCESS_FILE_TIMEOUT_SECONDS

    worker_id, worker = _group_worker(template)
    props = worker["Properties"]
    assert props["Timeout"] == PROCESS_FILE_TIMEOUT_SECONDS
    (mapping,) = _mappings_of(template, worker_id)
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    queue = template["Resources"][queue_id]["Properties"]
    assert queue["VisibilityTimeout"] == 6 * PROCESS_FILE_TIMEOUT_SECONDS
    assert props["Environment"]["Variables"]["QUEUE_URL"] == {"Ref": queue_id}
    assert props["Environment"]["Variables"]["LEASE_SECONDS"] == str(PROCESS_FILE_TIMEOUT_SECONDS + 30)
    dlq_id = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert props["Environment"]["Variables"]["DLQ_URL"] == {"Ref": dlq_id}
    assert dlq_id != logical_id(template, "AWS::SQS::Queue", "QueuesDeadLetterQueue")


def test_every_function_that_sends_jobs_knows_each_types_queue(template: dict[str, Any]) -> None:
    """The API, the workers and recovery send a process_file job to its worker's queue (JOB_QUEUE_URLS).
    Seen to fail with the map left out of the recovery function's environment."""
    worker_id, _ = _group_worker(template)
    (mapping,) = _mappings_of(template, worker_id)
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    for entry_point in ("api", "worker", "recovery"):
        variables = function(template, entry_point)[1]["Properties"]["Environment"]["Variables"]
        assert concrete("x", variables["JOB_QUEUE_URLS"]) == '{"process_file":"resolved-x"}'
        parts = variables["JOB_QUEUE_URLS"]["Fn::Join"][1]
        assert {"Ref": queue_id} in parts


def test_each_worker_drains_a_high_queue_of_its_own_that_redrives_as_its_queue_does(
    template: dict[str, Any],
) -> None:
    """`high` jobs have a queue per worker group, polled by a mapping of its own (Lambda scales each
    mapping apart, so the queue's backlog never holds them back), with the queue's visibility and its
    DLQ. Seen to fail with the high queue's mapping left out of `Triggers`."""
    for worker_id, _ in functions(template, "worker"):
        (queue_mapping,) = _mappings_of(template, worker_id)
        (high_mapping,) = _mappings_of(template, worker_id, high=True)
        queue = template["Resources"][queue_mapping["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]
        high = template["Resources"][high_mapping["EventSourceArn"]["Fn::GetAtt"][0]]["Properties"]
        assert high["RedrivePolicy"] == queue["RedrivePolicy"]
        assert high["VisibilityTimeout"] == queue["VisibilityTimeout"]
        assert high_mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert high_mapping["ScalingConfig"] == {"MaximumConcurrency": config.HIGH_QUEUE_MAX_CONCURRENCY}
        assert high_mapping.get("MaximumBatchingWindowInSeconds", 0) == 0


def test_every_function_that_sends_jobs_knows_each_queues_high_queue(template: dict[str, Any]) -> None:
    """Seen to fail with HIGH_QUEUE_URLS left out of `job_types_environment`."""
    pairs = {
        _mappings_of(template, worker_id)[0]["EventSourceArn"]["Fn::GetAtt"][0]: _mappings_of(
            template, worker_id, high=True
        )[0]["EventSourceArn"]["Fn::GetAtt"][0]
        for worker_id, _ in functions(template, "worker")
    }
    for entry_point in ("api", "worker", "recovery", "schedules"):
        variables = function(template, entry_point)[1]["Properties"]["Environment"]["Variables"]
        parts = variables[config.ENV_HIGH_QUEUE_URLS]["Fn::Join"][1]
        refs = [p["Ref"] for p in parts if isinstance(p, dict)]
        assert dict(zip(refs[::2], refs[1::2], strict=True)) == pairs


def test_the_recovery_function_sends_letters_to_each_job_queues_own_dlq_and_to_no_other_queue(
    template: dict[str, Any],
) -> None:
    """The sweep's letter of a workflow it ends dead goes to its group's DLQ: the recovery function knows
    each job queue's DLQ (its redrive target) and may SendMessage to every worker's DLQ, nothing more on
    them. Seen to fail with DEAD_LETTER_QUEUE_URLS left out of `job_types_environment` (synth refuses:
    RecoverySettings requires it), and with `Resource.EVERY_DEAD_LETTER_QUEUE` dropped from the recovery row of `infra/access.py`."""
    queues = template["Resources"]
    dead_letter_of = {
        mapping["EventSourceArn"]["Fn::GetAtt"][0]: queues[mapping["EventSourceArn"]["Fn::GetAtt"][0]][
            "Properties"
        ]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        for worker_id, _ in functions(template, "worker")
        for mapping in _mappings_of(template, worker_id)
    }
    assert len(set(dead_letter_of.values())) >= 2  # the shared worker's and a group's
    props = function(template, "recovery")[1]["Properties"]
    parts = props["Environment"]["Variables"][config.ENV_DEAD_LETTER_QUEUE_URLS]["Fn::Join"][1]
    refs = [p["Ref"] for p in parts if isinstance(p, dict)]
    assert dict(zip(refs[::2], refs[1::2], strict=True)) == dead_letter_of

    on_dead_letters = {
        (action, rendered)
        for action, rendered in grants(role_statements(template, props["Role"]))
        if "DeadLetterQueue" in rendered
    }
    assert on_dead_letters == {("sqs:SendMessage", f"Arn({dlq})") for dlq in dead_letter_of.values()}


def _recovery_rule(template: dict[str, Any]) -> dict[str, Any]:
    (rule,) = [r["Properties"] for r in resources(template, "AWS::Events::Rule").values()]
    return rule


def test_recovery_runs_on_a_schedule(template: dict[str, Any]) -> None:
    recovery_id, _ = function(template, "recovery")
    rule = _recovery_rule(template)
    assert rule["ScheduleExpression"] == f"rate({config.RECOVERY_RATE_MINUTES} minutes)"
    assert rule["State"] == "ENABLED"
    (target,) = rule["Targets"]
    assert render(target["Arn"]) == f"Arn({recovery_id})"
    (permission,) = [
        p["Properties"]
        for p in resources(template, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert permission["FunctionName"] == {"Fn::GetAtt": [recovery_id, "Arn"]}


def test_recovery_rate_follows_context(custom_template: dict[str, Any]) -> None:
    rule = _recovery_rule(custom_template)
    assert rule["ScheduleExpression"] == f"rate({CUSTOM_CONTEXT['recoveryRateMinutes']} minutes)"
