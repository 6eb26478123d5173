"""GET /stats: the pipeline at a glance, for the console's overview (camelCase on the wire)."""

from pydantic import Field

from lambdas.models.wire import WireModel


class Tally(WireModel):
    count: int = Field(description="How many were counted; with `more`, at least this many (show `1,000+`).")
    more: bool = Field(description="The count stopped at its bound: there are more than `count`.")


class QueueView(WireModel):
    visible: int | None = Field(
        description="Messages waiting to be received (ApproximateNumberOfMessages); null for a client key."
    )
    in_flight: int | None = Field(
        description="Messages received and not yet deleted (being worked on, or backing off); null for a "
        "client key."
    )
    delayed: int | None = Field(
        description="Messages sent with a delay that has not run out yet; null for a client key."
    )
    oldest_pending_age_seconds: float | None = Field(
        description="How long the caller's oldest `pending` job has been pending; null when there is none."
    )


class DeadLetterQueueView(WireModel):
    visible: int = Field(
        description="Messages in the dead-letter queue not yet taken by the dead_letter function."
    )


class MinuteView(WireModel):
    minute: str = Field(description="The minute's start (ISO-8601, UTC).")
    done: int
    dead: int


class StatsView(WireModel):
    statuses: dict[str, Tally] = Field(
        description="The caller's jobs per state (every state, zeros included)."
    )
    types: dict[str, Tally] = Field(
        description="The caller's jobs per type, among at most the newest 1,000 jobs."
    )
    queue: QueueView = Field(
        description="The main queue: its depths are the whole pipeline's, so only the operator key sees "
        "them; the oldest pending job is the caller's own."
    )
    dead_letter_queue: DeadLetterQueueView | None = Field(
        description="The dead-letter queue (the whole pipeline's): null for a client key."
    )
    finished_per_minute: list[MinuteView] = Field(
        description="The caller's jobs that ended `done` or `dead`, per minute over the last hour, oldest first."
    )
    more: bool = Field(
        description="finishedPerMinute stopped at its bound: more jobs finished than it shows."
    )
