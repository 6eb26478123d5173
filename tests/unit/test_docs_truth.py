"""What the README and docs/local.md tell a user matches what the stack and the API answer.

Each test reads the doc's own text, so a doc that drifts from the code fails here instead of in a
user's first week.
"""

import re
from pathlib import Path

from lambdas import config
from lambdas.handlers.rest.errors import _BY_TYPE
from lambdas.lifecycle.errors import JobNotFoundError, NotCancellableError, NotRetryableError

ROOT = Path(__file__).resolve().parents[2]


def test_the_readmes_location_example_names_the_stage_the_stack_deploys() -> None:
    """Seen to fail with the README's old `/prod/` example."""
    readme = (ROOT / "README.md").read_text()
    locations = re.findall(r"Location: https://\S+?\.amazonaws\.com/([^/\s]+)/jobs/", readme)

    assert locations, "the README shows no Location example"
    assert set(locations) == {config.API_STAGE}


def test_the_clis_refused_exit_code_names_the_codes_a_job_action_is_answered_with() -> None:
    """Seen to fail with docs/local.md's old `not_found` (the code of an unknown route, not a job)."""
    local = (ROOT / "docs" / "local.md").read_text()
    row = next(line for line in local.splitlines() if line.startswith("| 4 |"))
    named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", row))
    answered = {_BY_TYPE[error][1] for error in (JobNotFoundError, NotRetryableError, NotCancellableError)}

    assert named == answered
