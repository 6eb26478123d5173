"""The recurring schedules' timer on AWS (infra/schedules.py): one EventBridge Scheduler schedule in a group
of the stack, its target retried then dead-lettered, the dead letters alarmed, the role least privilege."""

import json
from typing import Any

from tests.infra.cfn import only, resources


def test_one_minute_tick_in_a_group_of_the_stack_with_retries_and_a_dead_letter_queue(
    template: dict[str, Any],
) -> None:
    group_id, _ = only(template, "AWS::Scheduler::ScheduleGroup")
    _, schedule = only(template, "AWS::Scheduler::Schedule")
    props = schedule["Properties"]
    assert props["GroupName"] == {"Ref": group_id}
    assert props["ScheduleExpression"] == "rate(1 minute)"
    target = props["Target"]
    assert json.loads(target["Input"]) == {"tick": "<aws.scheduler.scheduled-time>"}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0
    (queue_id,) = [k for k in resources(template, "AWS::SQS::Queue") if k.startswith("SchedulesFailedTicks")]
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    (function_id,) = [
        k
        for k, f in resources(template, "AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "lambdas.handlers.schedules.handler"
    ]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}


def test_the_scheduler_role_invokes_only_the_schedules_function_and_the_dead_letters_are_alarmed(
    template: dict[str, Any],
) -> None:
    _, schedule = only(template, "AWS::Scheduler::Schedule")
    role_id = schedule["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
    role = resources(template, "AWS::IAM::Role")[role_id]["Properties"]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    # Only this stack's schedule group, in this account, may have Scheduler assume it. Seen to fail with
    # the trust checking `aws:SourceAccount` alone.
    (group_id,) = resources(template, "AWS::Scheduler::ScheduleGroup")
    assert statement["Condition"]["StringEquals"] == {
        "aws:SourceAccount": {"Ref": "AWS::AccountId"},
        "aws:SourceArn": {"Fn::GetAtt": [group_id, "Arn"]},
    }
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    actions = sorted(s["Action"] for statements in policies for s in statements)
    assert actions == ["lambda:InvokeFunction", "sqs:SendMessage"]
    # No function may pass any role: the API never creates AWS schedules.
    every = json.dumps([p["Properties"] for p in resources(template, "AWS::IAM::Policy").values()])
    assert "iam:PassRole" not in every
    alarms = [a["Properties"] for a in resources(template, "AWS::CloudWatch::Alarm").values()]
    (failed,) = [a for a in alarms if a["AlarmName"].endswith("ScheduleTicksFailed")]
    assert failed["Dimensions"][0]["Value"]["Fn::GetAtt"][0].startswith("SchedulesFailedTicks")
