"""A fan-out raises one alert, not one per dead delivery (issue 19, row 4: "flood the operator").

A 50-endpoint fan-out whose every endpoint answers 410 has 50 dead deliveries; before the change each
raised its own SNS alert (50 measured). Now each delivery's letter waits until its fan-out has
finished, and then one alert goes out for the fan-out, with its counts and its first dead deliveries.
"""

from typing import Any

import pytest

from lambdas.jobs.types.webhook_delivery import delivery_id
from lambdas.lifecycle.sweeps.dead_letter import FANOUT_ALERT_CHILDREN
from tests.support.pipeline import Pipeline
from tests.support.webhook_receiver import Reply

pytestmark = pytest.mark.usefixtures("loopback_webhooks")


def fan_out(pipeline: Pipeline, receiver: Any, count: int, gone: set[int]) -> str:
    targets = []
    for i in range(count):
        path = f"/ep/{i:03d}"
        if i in gone:
            receiver.script(path, Reply(410, body=b"endpoint removed"))
        targets.append({"id": f"ep-{i:03d}", "url": receiver.url(path)})
    return pipeline.submit("webhook_fanout", {"eventType": "x.y", "data": {}, "endpoints": targets})


def test_fifty_dead_deliveries_of_one_fan_out_raise_one_alert(stack, receiver):
    """Seen to fail (50 alerts, one per delivery) with `_raise`'s fan-out branch removed."""
    pipeline = stack.pipeline
    fanout_id = fan_out(pipeline, receiver, 50, gone=set(range(50)))

    pipeline.drain(rounds=100, letters_return=True)

    assert pipeline.job(fanout_id)["status"] == "done"
    alerts = pipeline.alerts()
    assert len(alerts) == 1, f"{len(alerts)} alerts for one fan-out"
    (alert,) = alerts
    assert alert["subject"] == f"offload: 50 of 50 dead in fan-out {fanout_id}"
    assert alert["jobType"] == "webhook_fanout"
    assert (alert["jobId"], alert["childrenTotal"], alert["childrenDead"], alert["childrenDone"]) == (
        fanout_id,
        50,
        50,
        0,
    )
    first = [delivery_id(fanout_id, f"ep-{i:03d}") for i in range(FANOUT_ALERT_CHILDREN)]
    assert [c["jobId"] for c in alert["deadChildren"]] == first
    assert all("410" in c["lastError"] for c in alert["deadChildren"])
    assert pipeline.visible(pipeline.dlq_url) == 0


def test_a_fan_out_with_some_dead_deliveries_alerts_once_after_it_finished(stack, receiver):
    pipeline = stack.pipeline
    fanout_id = fan_out(pipeline, receiver, 12, gone={2, 7})

    pipeline.drain(rounds=100, letters_return=True)

    (alert,) = pipeline.alerts()
    assert (alert["childrenDead"], alert["childrenDone"]) == (2, 10)
    assert [c["jobId"] for c in alert["deadChildren"]] == [
        delivery_id(fanout_id, "ep-002"),
        delivery_id(fanout_id, "ep-007"),
    ]


def test_a_retried_fan_out_whose_deliveries_die_again_alerts_once_more(stack, receiver):
    """The retry clears the fan-out's alert: a new death is news. Seen to fail (no second alert) with
    `_parent_update`'s removal of `alertedAt` dropped."""
    pipeline = stack.pipeline
    fanout_id = fan_out(pipeline, receiver, 3, gone={0})
    pipeline.drain(rounds=100, letters_return=True)
    assert len(pipeline.alerts()) == 1
    receiver.script("/ep/000", Reply(410, body=b"still gone"))

    assert pipeline.request("POST", f"/jobs/{fanout_id}/retry").status == 202
    pipeline.drain(rounds=100, letters_return=True)

    (alert,) = pipeline.alerts()
    assert (alert["jobId"], alert["childrenDead"]) == (fanout_id, 1)
