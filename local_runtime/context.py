"""The Lambda context object handed to handlers run outside AWS (local runtime and tests)."""

import time
import uuid
from dataclasses import dataclass, field

DEFAULT_REGION = "us-east-1"
# moto accepts any credentials; these make boto3 sign requests without looking for real ones.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
DEFAULT_ACCOUNT = "123456789012"


@dataclass
class LambdaContext:
    """The attributes of the Python runtime's context that handlers and Powertools read."""

    function_name: str = "offload-local"
    memory_limit_in_mb: int = 128
    timeout_seconds: float = 30.0
    function_version: str = "$LATEST"
    region: str = DEFAULT_REGION
    account: str = DEFAULT_ACCOUNT
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Monotonic deadline; by default the timeout counts from when the context was made.
    deadline: float | None = None

    def __post_init__(self) -> None:
        if self.deadline is None:
            self.deadline = time.monotonic() + self.timeout_seconds

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"{time.strftime('%Y/%m/%d')}/[{self.function_version}]{self.aws_request_id.replace('-', '')}"

    def get_remaining_time_in_millis(self) -> int:
        assert self.deadline is not None
        return max(0, int((self.deadline - time.monotonic()) * 1000))
