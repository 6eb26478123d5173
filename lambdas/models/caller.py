"""Who is calling the API: the owner recorded on the jobs it submits, and whether it sees every job."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    owner: str  # the API key's id (API Gateway's, never the key's value)
    operator: bool = False
