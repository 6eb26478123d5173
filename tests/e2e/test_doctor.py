"""`offload doctor`, a deploy's smoke test: against the local runtime (its job part), and its alarm part
against CloudWatch in moto holding the template's own alarms."""

import subprocess
import sys
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambdas import config
from local_runtime.runtime import LocalRuntime
from offload_cli.doctor import alarm_problems, cloudwatch_alarms

pytestmark = pytest.mark.slow


def test_doctor_submits_a_job_and_sees_it_done_on_the_local_runtime(runtime: LocalRuntime) -> None:
    """Seen to fail (exit 1, `FAIL job ... is done`) with the doctor's check of the job's status
    inverted."""
    ran = subprocess.run(
        [sys.executable, "-m", "offload_cli", "--url", runtime.url, "--api-key", runtime.api_key, "doctor"],
        capture_output=True,
        text=True,
        timeout=240,
    )

    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.startswith("ok   job ")
    assert "alarms not checked: the local runtime makes none" in ran.stdout


def _put(client: Any, alarm: dict[str, Any]) -> None:
    client.put_metric_alarm(
        AlarmName=alarm["AlarmName"],
        AlarmDescription=alarm["AlarmDescription"],
        MetricName=alarm.get("MetricName", "JobDead"),
        Namespace=alarm.get("Namespace", config.METRICS_NAMESPACE),
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
    )


def test_doctor_fails_on_an_alarm_in_alarm_and_on_a_stack_without_alarms(template: dict[str, Any]) -> None:
    """Seen to fail with `alarm_problems` ignoring StateValue (the ALARM went unreported)."""
    alarms = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    with mock_aws():
        client = boto3.client("cloudwatch", region_name="us-east-1")
        for alarm in alarms:
            _put(client, alarm)
        stack = config.STACK_ID

        listed = cloudwatch_alarms(client, stack)
        assert len(listed) == len(alarms)
        assert alarm_problems(listed, stack) == []  # deployed: INSUFFICIENT_DATA until their first data

        client.set_alarm_state(AlarmName=f"{stack}-JobsDead", StateValue="ALARM", StateReason="1 dead job")
        (problem,) = alarm_problems(cloudwatch_alarms(client, stack), stack)
        assert problem.startswith(f"alarm {stack}-JobsDead is in ALARM: 1 dead job")
        assert "Runbook: docs/runbooks.md#jobs-dead" in problem

        assert alarm_problems(cloudwatch_alarms(client, "Offload-prod"), "Offload-prod") == [
            "no CloudWatch alarm is named Offload-prod-...: is --stack the deployed stack's name?"
        ]
