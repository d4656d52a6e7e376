"""Start a real redis-server on a free loopback port (helpers for the fixtures and tests)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The settings that make an acknowledged write durable (the provider refuses anything less).
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")


@dataclass(frozen=True)
class RedisServer:
    url: str
    port: int
    password: str | None = None

    def cli(self, *args: str) -> str:
        """Run redis-cli against this server (test code only, never inside a suite test)."""
        auth = ("--no-auth-warning", "-a", self.password) if self.password else ()
        done = subprocess.run(
            ["redis-cli", "-p", str(self.port), *auth, *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def run_redis(folder: Path, *args: str, password: str | None = None) -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    folder.mkdir(parents=True, exist_ok=True)
    auth = ("--requirepass", password) if password else ()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(folder),
            "--daemonize",
            "no",
            *auth,
            *args,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                pytest.fail(f"redis-server exited with {proc.returncode} before listening")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server did not listen on port {port} within 10 s")
            time.sleep(0.05)
        yield RedisServer(url=f"redis://127.0.0.1:{port}", port=port, password=password)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
