"""The CLI's failures, each with the exit code a script can act on (listed in docs/local.md)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    DEAD = 1  # `--wait`: the job ended dead
    USAGE = 2  # bad flags or input (argparse's own code too): fix the command line
    UNREACHABLE = 3  # no API, runtime or AWS endpoint answered: start it, or check the URL
    REFUSED = 4  # the API (4xx) or AWS refused the request: fix the request or the credentials
    FAILED = 5  # the API answered 5xx, or something that is not its JSON
    WAIT_TIMEOUT = 6  # `--wait`: the job had not finished in `--timeout` seconds
    INTERNAL = 70  # a bug in the CLI (still one line, no traceback)
    INTERRUPTED = 130  # Ctrl-C


class CliError(Exception):
    def __init__(self, message: str, code: ExitCode, api_code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.api_code = api_code  # the API's `error.code` (e.g. `forbidden`), when it answered one
