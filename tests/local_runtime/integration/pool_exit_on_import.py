"""A handler module whose init phase ends the process (as a bad dependency calling exit() could)."""

import sys

sys.exit(4)


def handler(event: object, context: object) -> None:
    pass
