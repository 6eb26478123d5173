"""Who is asking: the API key's id (the owner of the jobs it submits) and whether it is the operator's."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    owner: str
    operator: bool = False

    def names(self, client: str | None) -> bool:
        """Whether the caller may name `client` (`?client=`): itself, or any client for the operator."""
        return client is None or client == self.owner or self.operator

    def sees(self, job_owner: str) -> bool:
        """A client sees only its own jobs; the operator sees every job."""
        return self.operator or job_owner == self.owner
