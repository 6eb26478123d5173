"""`make run`: the whole pipeline on loopback until Ctrl-C."""

import argparse
import os
import signal
import sys
import threading
from typing import Any

from local_runtime.front_door import PortInUseError
from local_runtime.runtime import DEFAULT_PORT, LocalRuntime, RuntimeSettings


def _context_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def parse_args(argv: list[str] | None = None) -> RuntimeSettings:
    parser = argparse.ArgumentParser(prog="python -m local_runtime", description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("OFFLOAD_LOCAL_PORT", DEFAULT_PORT)))
    parser.add_argument("--api-key", default=os.environ.get("OFFLOAD_LOCAL_API_KEY"))
    parser.add_argument(
        "-c",
        "--context",
        type=_context_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="CDK context for the synthesized stack, as `cdk synth -c` takes it (e.g. backoffBaseSeconds=2)",
    )
    parser.add_argument(
        "--schedule-seconds",
        type=float,
        default=None,
        help="run the recovery schedule (the scheduled rules) this often instead of the template's rate "
        "(development); the schedules tick keeps its minute",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show every log line of the functions")
    parser.add_argument(
        "--no-reload",
        action="store_true",
        help="keep the functions' code as it was at start (by default a change to lambdas/ or a job "
        "package restarts only the function environments)",
    )
    args = parser.parse_args(argv)
    return RuntimeSettings(
        port=args.port,
        api_key=args.api_key,
        context=dict(args.context),
        schedule_seconds=args.schedule_seconds,
        verbose=args.verbose,
        reload=not args.no_reload,
    )


def main(argv: list[str] | None = None) -> int:
    settings = parse_args(argv)
    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    runtime = LocalRuntime(settings)
    try:
        runtime.start()
    except PortInUseError as error:
        print(f"the local runtime could not start: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        print(f"the local runtime could not start: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    while not stopping.wait(0.5):
        pass
    runtime.console.say("stopping...")
    runtime.stop()
    runtime.console.say("stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
