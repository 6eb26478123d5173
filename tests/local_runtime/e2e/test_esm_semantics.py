"""The SQS event source mapping emulation against AWS's documented semantics, message by message.

Real moto server on loopback, real worker processes; the handler's behaviour is chosen by each
message body (tests/local_runtime/e2e/handlers_for_tests.py).
"""

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from local_runtime.esm import BatchOutcome, SqsEventSource
from local_runtime.lambda_pool import FunctionConfig, FunctionPool
from local_runtime.moto_server import MotoServer
from local_runtime.template import EventSourceMapping

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("e2e")]

REPO = Path(__file__).resolve().parents[3]
VISIBILITY_TIMEOUT = 2
FUNCTION_TIMEOUT = 1.5
# A kept message comes back no sooner than the visibility timeout after the receive that hid it (its
# first receive, for a second delivery); the slack is the millisecond stamps' rounding, nothing more.
REDELIVERY_SLACK = 0.05


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


@dataclass
class Mapping:
    sqs: Any
    queue_url: str
    pool: FunctionPool
    source: SqsEventSource
    outcomes: list[BatchOutcome] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def record(self, outcome: BatchOutcome) -> None:
        with self.changed:
            self.outcomes.append(outcome)
            self.changed.notify_all()

    def send(self, **body: Any) -> str:
        message_id: str = self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(body))[
            "MessageId"
        ]
        return message_id

    def wait_for(
        self, predicate: Callable[[list[BatchOutcome]], bool], timeout: float = 15
    ) -> list[BatchOutcome]:
        with self.changed:
            if not self.changed.wait_for(lambda: predicate(self.outcomes), timeout):
                raise AssertionError(
                    f"not observed within {timeout} s: {[o.as_dict() for o in self.outcomes]}"
                )
            return list(self.outcomes)

    def queue_is_empty(self) -> bool:
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return attributes == {
            "ApproximateNumberOfMessages": "0",
            "ApproximateNumberOfMessagesNotVisible": "0",
        }


@pytest.fixture
def start_mapping(moto: MotoServer) -> Iterator[Callable[..., Mapping]]:
    started: list[Mapping] = []

    def start(
        batch_size: int = 10,
        window: int = 0,
        report_failures: bool = True,
        concurrency: int | None = 2,
    ) -> Mapping:
        sqs = moto.client("sqs")
        name = f"esm-{uuid.uuid4().hex[:8]}"
        url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT)})[
            "QueueUrl"
        ]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pool = FunctionPool(
            FunctionConfig(
                name=name,
                handler="tests.local_runtime.e2e.handlers_for_tests.handler",
                timeout_seconds=FUNCTION_TIMEOUT,
                memory_mb=128,
                environment={**moto.environment(), "PYTHONPATH": str(REPO)},
            ),
            max_environments=concurrency or 5,
            log_sink=lambda _name, _line: None,
        )
        mapping = EventSourceMapping(
            logical_id=name,
            function=name,
            queue=name,
            queue_url=url,
            queue_arn=arn,
            batch_size=batch_size,
            batching_window_seconds=window,
            report_batch_item_failures=report_failures,
            maximum_concurrency=concurrency,
        )
        holder = Mapping(sqs=sqs, queue_url=url, pool=pool, source=None)  # type: ignore[arg-type]
        holder.source = SqsEventSource(mapping, name, sqs, pool.invoke, moto.region, on_batch=holder.record)
        holder.source.start()
        started.append(holder)
        return holder

    yield start
    for mapping in started:
        mapping.source.stop()
        mapping.pool.close()


def test_partial_batch_response_deletes_exactly_the_successful_messages(
    start_mapping: Callable[..., Mapping],
) -> None:
    # given a batch gathered over a window: two successes around one reported failure
    esm = start_mapping(window=1, concurrency=1)
    ok_1, failed, ok_2 = esm.send(do="ok"), esm.send(do="fail"), esm.send(do="ok")

    # when the batch is processed and the kept message comes back
    outcomes = esm.wait_for(lambda o: len(o) >= 2)

    # then the successes were deleted, the failure stayed and was delivered again on its own
    first, second = outcomes[0], outcomes[1]
    assert set(first.message_ids) == {ok_1, failed, ok_2}
    assert set(first.deleted) == {ok_1, ok_2}
    assert second.message_ids == (failed,)
    assert second.receive_counts == (2,)
    assert second.started - second.first_received[0] >= VISIBILITY_TIMEOUT - REDELIVERY_SLACK


@pytest.mark.parametrize(
    "response",
    [{"batchItemFailures": []}, {"batchItemFailures": None}, {}, None],
    ids=["empty-list", "null-list", "empty-response", "null-response"],
)
def test_no_reported_failures_deletes_the_whole_batch(
    start_mapping: Callable[..., Mapping], response: Any
) -> None:
    esm = start_mapping()
    message = esm.send(do="respond", response=response)

    (outcome,) = esm.wait_for(lambda o: len(o) >= 1)
    time.sleep(VISIBILITY_TIMEOUT + 1)

    assert outcome.deleted == (message,)
    assert len(esm.outcomes) == 1
    assert esm.queue_is_empty()


@pytest.mark.parametrize(
    "failure",
    [
        {"itemIdentifier": "not-a-message-of-this-batch"},
        {"itemIdentifier": ""},
        {"itemIdentifier": None},
        {"id": "x"},
    ],
    ids=["unknown-id", "empty-id", "null-id", "bad-key"],
)
def test_an_identifier_not_in_the_batch_fails_the_whole_batch(
    start_mapping: Callable[..., Mapping], failure: dict[str, Any]
) -> None:
    esm = start_mapping()
    message = esm.send(do="respond", response={"batchItemFailures": [failure]})

    first, again = esm.wait_for(lambda o: len(o) >= 2)[:2]

    assert first.invocation.ok
    assert first.deleted == ()
    assert again.message_ids == (message,)
    assert again.receive_counts == (2,)


def test_an_exception_fails_the_whole_batch_until_the_visibility_timeout(
    start_mapping: Callable[..., Mapping],
) -> None:
    esm = start_mapping(window=1, concurrency=1)
    ok, boom = esm.send(do="ok"), esm.send(do="raise")

    first, again = esm.wait_for(lambda o: len(o) >= 2)[:2]

    assert not first.invocation.ok
    assert first.invocation.error_type == "RuntimeError"
    assert first.deleted == ()
    assert set(again.message_ids) == {ok, boom}
    assert again.receive_counts == (2, 2)
    assert again.started - max(again.first_received) >= VISIBILITY_TIMEOUT - REDELIVERY_SLACK


def test_without_report_batch_item_failures_a_success_deletes_everything(
    start_mapping: Callable[..., Mapping],
) -> None:
    esm = start_mapping(report_failures=False, window=1, concurrency=1)
    ids = {esm.send(do="ok"), esm.send(do="fail")}

    (outcome,) = esm.wait_for(lambda o: len(o) >= 1)
    time.sleep(VISIBILITY_TIMEOUT + 1)

    assert set(outcome.deleted) == ids
    assert len(esm.outcomes) == 1


def test_a_handler_past_its_timeout_is_killed_and_its_batch_comes_back(
    start_mapping: Callable[..., Mapping],
) -> None:
    esm = start_mapping(concurrency=1)
    message = esm.send(do="sleep", seconds=FUNCTION_TIMEOUT + 3)

    first, again = esm.wait_for(lambda o: len(o) >= 2)[:2]

    assert first.invocation.timed_out
    assert first.invocation.error_message == f"Task timed out after {FUNCTION_TIMEOUT:.2f} seconds"
    assert first.invocation.duration_ms < (FUNCTION_TIMEOUT + 1) * 1000  # killed, not waited for
    assert first.deleted == ()
    assert again.message_ids == (message,)
    assert again.invocation.cold_start  # the killed environment was replaced
    assert esm.pool.timeouts >= 1


def test_environments_stay_warm_between_invocations(start_mapping: Callable[..., Mapping]) -> None:
    esm = start_mapping(concurrency=1)
    for sent in range(1, 4):
        esm.send(do="ok")
        esm.wait_for(lambda o, n=sent: len(o) >= n)

    outcomes = esm.outcomes
    assert [o.invocation.cold_start for o in outcomes] == [True, False, False]
    assert len({o.invocation.result["pid"] for o in outcomes}) == 1
    assert esm.pool.cold_starts == 1


def test_batch_size_caps_each_invocation(start_mapping: Callable[..., Mapping]) -> None:
    esm = start_mapping(batch_size=2, window=1, concurrency=1)
    sent = {esm.send(do="ok") for _ in range(5)}

    outcomes = esm.wait_for(lambda o: sum(len(b.message_ids) for b in o) >= 5)

    assert all(len(o.message_ids) <= 2 for o in outcomes)
    assert {m for o in outcomes for m in o.message_ids} == sent


def test_batching_window_gathers_messages_sent_apart(start_mapping: Callable[..., Mapping]) -> None:
    esm = start_mapping(window=3, concurrency=1)
    first = esm.send(do="ok")
    time.sleep(1)
    second = esm.send(do="ok")

    (outcome,) = esm.wait_for(lambda o: len(o) >= 1)

    assert set(outcome.message_ids) == {first, second}


def test_a_window_gathers_with_few_receives_and_still_closes_on_time(
    start_mapping: Callable[..., Mapping],
) -> None:
    # given a poller waiting on an empty queue with a 2 s window, its receives counted from now
    esm = start_mapping(window=2, concurrency=1)
    receives: list[float] = []
    esm.sqs.meta.events.register("before-call.sqs.ReceiveMessage", lambda **_: receives.append(time.time()))

    # when nine messages arrive over ~0.4 s
    sent_at = time.time()
    sent = set()
    for _ in range(9):
        sent.add(esm.send(do="ok"))
        time.sleep(0.05)

    # then one batch holds them all, invoked when the window closed (not a receive per message)
    (outcome,) = esm.wait_for(lambda o: len(o) >= 1)
    assert set(outcome.message_ids) == sent
    assert len([t for t in receives if t < outcome.started]) <= 5
    assert outcome.started - sent_at < 2 + 1.5  # the window, plus at most one long poll's overshoot


def test_maximum_concurrency_bounds_parallel_invocations(start_mapping: Callable[..., Mapping]) -> None:
    esm = start_mapping(batch_size=1, concurrency=2)
    for _ in range(5):
        esm.send(do="sleep", seconds=1.0)

    outcomes = esm.wait_for(lambda o: len(o) >= 5, timeout=30)

    assert _peak([(o.started, o.finished) for o in outcomes]) == 2


def test_pollers_take_turns_to_receive_while_batches_run_at_once(
    start_mapping: Callable[..., Mapping],
) -> None:
    # given four pollers, every receive they make timed from start to end
    esm = start_mapping(batch_size=2, concurrency=4)
    receives: list[tuple[float, float]] = []
    begun: dict[int, float] = {}

    def before(**_: Any) -> None:
        begun[threading.get_ident()] = time.monotonic()

    def after(**_: Any) -> None:
        receives.append((begun.pop(threading.get_ident()), time.monotonic()))

    esm.sqs.meta.events.register("before-call.sqs.ReceiveMessage", before)
    esm.sqs.meta.events.register("after-call.sqs.ReceiveMessage", after)
    time.sleep(2.5)  # every poller has started and long-polls the empty queue

    # when eight slow messages arrive
    for _ in range(8):
        esm.send(do="sleep", seconds=1.0)
    outcomes = esm.wait_for(lambda o: sum(len(b.message_ids) for b in o) >= 8, timeout=30)

    # then never two receives were in flight at once, yet batches ran four at a time
    assert _peak(receives) == 1
    assert _peak([(o.started, o.finished) for o in outcomes]) == 4


def _peak(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak
