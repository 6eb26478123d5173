"""Run `offload` in-process as a user would type it, and check its one-line failures."""

import pytest

from offload_cli.main import main
from tests.support.webhook_receiver import Receiver


def offload(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.startswith("offload: ")
    return err


def against(receiver: Receiver, *argv: str) -> list[str]:
    return ["--url", receiver.url("/v1/"), "--api-key", "k", *argv]
