"""What a function does when Lambda resumes it from a SnapStart snapshot (CDK context `snapStart`).

Every environment restored from one snapshot starts with the same memory: the same state of `random`
(the backoff's and the claims' jitter would draw the same numbers in every environment, and bursts of
retries would line up again) and whatever the import created. boto3 clients are created on first use,
so a snapshot taken after the import holds none; the cache is emptied anyway, so that a client made
before a snapshot, with its connections and credentials, is never carried into a restored one. Ids come
from `uuid.uuid4` (os.urandom), which a restore does not repeat.

The hook registry is Lambda's `snapshot_restore_py`, part of the managed Python runtimes (3.12 on); it is
not bundled, so elsewhere (tests aside, `make run`, the bench) nothing is registered and nothing runs.
"""

import random


def after_restore() -> None:
    random.seed()  # from os.urandom: each restored environment draws its own numbers
    from lambdas.store import clients

    clients.reset()


def register() -> bool:
    """Register the restore hook with Lambda's runtime; False where there is no such runtime."""
    try:
        # Only Lambda's managed runtime has it: importing it is how we learn where we run.
        from snapshot_restore_py import register_after_restore
    except ImportError:  # not Lambda's managed runtime: no snapshot is ever taken
        return False
    register_after_restore(after_restore)
    return True
