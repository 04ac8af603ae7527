"""pywb (the replay tests' `wayback` and `wb-manager`), which lives in a venv of its own
(`make replay-tools`, see the Makefile for why): where it is, and a `wayback` run on loopback."""

import contextlib
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from crawl_assets.crawler.settings import PROJECT_ROOT

PYWB_BIN = PROJECT_ROOT / ".tools" / "pywb" / "bin"
WAYBACK_START_TIMEOUT_S = 30


def require_pywb() -> None:
    """Skip without pywb, except in CI, where `make test` installs it: there its absence is a failure."""
    if not (PYWB_BIN / "wayback").exists():
        message = f"pywb is not installed in {PYWB_BIN.parent}: run `make replay-tools`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_wayback(command: str, cwd: Path, port: int):
    """Run a `wayback` shell command (serving on 127.0.0.1:port) in cwd until it answers;
    yields its base URL and stops it (its whole process group) afterwards."""
    log_path = cwd / "wayback.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, shell=True, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + WAYBACK_START_TIMEOUT_S
            while True:
                try:
                    httpx.get(base + "/", timeout=2)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, log_path.read_text()
                    assert time.monotonic() < deadline, f"wayback did not answer within {WAYBACK_START_TIMEOUT_S} s"
                    time.sleep(0.3)
            yield base
        finally:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=10)
