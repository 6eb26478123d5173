"""moto's server as a child process on loopback: the AWS wire protocol, state kept in memory."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

import boto3

from local_runtime.context import CREDENTIALS, DEFAULT_REGION
from local_runtime.moto_main import require_item_operations


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


class MotoServer:
    def __init__(self, port: int = 0, host: str = "127.0.0.1", region: str = DEFAULT_REGION) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.region = region
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> MotoServer:
        # Checked here too: the child's stderr goes nowhere, so its own failure would read as a busy port.
        require_item_operations()
        # Its request log goes nowhere: the runtime prints job transitions, not HTTP requests.
        self._process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, "-m", "local_runtime.moto_main", "-H", self.host, "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto's server exited at start (is port {self.port} free?)")
            try:
                with urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=1):  # noqa: S310
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto's server did not answer on {self.url} within {timeout:.0f} s")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def session(self) -> boto3.session.Session:
        return boto3.session.Session(
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=self.region,
        )

    def client(self, service: str) -> Any:
        return self.session().client(service, endpoint_url=self.url)

    def environment(self) -> dict[str, str]:
        """What a process needs in its environment for boto3 to talk to this server."""
        return {
            **CREDENTIALS,
            "AWS_ENDPOINT_URL": self.url,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }
