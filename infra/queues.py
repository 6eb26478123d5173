"""The job queues and their dead-letter queues: the shared worker's, and one set per worker group.

Each group has a high queue beside its queue, for `high` jobs (`JobQueue.send_job` routes them): the
group's worker drains it through a mapping of its own, which Lambda polls apart from the queue's, so a
backlog on the queue never holds a `high` job back. It redrives to the group's dead-letter queue, as
the queue does: a dead letter is handled the same whichever queue it came from."""

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.access import Access, Resource, grant
from infra.job_types import WorkerGroup
from infra.settings import DEAD_LETTER_TIMEOUT_SECONDS
from lambdas import config


@dataclass(frozen=True)
class QueuePair:
    group: WorkerGroup
    queue: sqs.Queue
    dead_letter: sqs.Queue
    high: sqs.Queue

    @property
    def job_queues(self) -> tuple[sqs.Queue, sqs.Queue]:
        """The queues the group's worker drains: its queue and its high queue."""
        return self.queue, self.high


class JobQueues(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, groups: Sequence[WorkerGroup]) -> None:
        super().__init__(scope, construct_id)
        # The shared worker's pair keeps the ids it always had; each other group's carries its suffix.
        self.pairs: dict[str, QueuePair] = {}
        for group in groups:
            # The dead-letter function's source queue: the same six-times rule as a job queue.
            dead_letter = self._queue(
                f"DeadLetterQueue{group.suffix}", config.DLQ_RETENTION_DAYS, 6 * DEAD_LETTER_TIMEOUT_SECONDS
            )
            # A DLQ has no redrive of its own (cdk-nag's SQS3 knows it for a DLQ): a message its function
            # cannot handle is retried here until retention ends, and the DLQ alarm fires meanwhile.
            queue, high = (
                self._queue(
                    f"{name}{group.suffix}",
                    config.MAIN_QUEUE_RETENTION_DAYS,
                    group.visibility_seconds,
                    sqs.DeadLetterQueue(queue=dead_letter, max_receive_count=config.MAX_RECEIVE_COUNT),
                )
                for name in ("Queue", "HighQueue")
            )
            self.pairs[group.suffix] = QueuePair(group, queue, dead_letter, high)
        self.main = self.pairs[""].queue
        self.dead_letter = self.pairs[""].dead_letter

    def _queue(
        self,
        construct_id: str,
        retention_days: int,
        visibility_seconds: int,
        dead_letter_queue: sqs.DeadLetterQueue | None = None,
    ) -> sqs.Queue:
        return sqs.Queue(
            self,
            construct_id,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(retention_days),
            visibility_timeout=Duration.seconds(visibility_seconds),
            dead_letter_queue=dead_letter_queue,
        )

    def routes(self) -> dict[str, str]:
        """type -> queue URL for every type outside the shared worker (JOB_QUEUE_URLS)."""
        return {
            name: pair.queue.queue_url
            for pair in self.pairs.values()
            if not pair.group.shared
            for name in pair.group.types
        }

    def high_routes(self) -> dict[str, str]:
        """Each job queue's URL -> its high queue's URL (HIGH_QUEUE_URLS)."""
        return {pair.queue.queue_url: pair.high.queue_url for pair in self.pairs.values()}

    def dead_letter_routes(self) -> dict[str, str]:
        """Each job queue's URL -> its dead-letter queue's URL (DEAD_LETTER_QUEUE_URLS)."""
        return {pair.queue.queue_url: pair.dead_letter.queue_url for pair in self.pairs.values()}

    def of(self, suffix: str = "") -> "GroupQueues":
        """The queues as the function of group `suffix` sees them ("" for every non-worker function)."""
        return GroupQueues(self, suffix)


class GroupQueues:
    """Grants for one function: its own job queue and DLQ, the others' job queues (jobs it sends or
    re-sends to their types' functions), and every DLQ (the dead-letter function's sources)."""

    def __init__(self, queues: JobQueues, suffix: str) -> None:
        self._queues = queues
        self._own = queues.pairs[suffix]

    def grant_access(self, grantee: iam.IGrantable, access: Access) -> None:
        pairs = self._queues.pairs.values()
        others = [q.queue_arn for p in pairs if p is not self._own for q in p.job_queues]
        arns: dict[Resource, str | list[str]] = {
            Resource.MAIN_QUEUE: [q.queue_arn for q in self._own.job_queues],
            Resource.DEAD_LETTER_QUEUE: self._own.dead_letter.queue_arn,
            Resource.EVERY_DEAD_LETTER_QUEUE: [p.dead_letter.queue_arn for p in self._queues.pairs.values()],
        }
        if others:
            arns[Resource.OTHER_JOB_QUEUES] = others
        grant(grantee, access, arns)
