"""What the demo web's tests share: an HTTP client to the demo web a module serves (its
`demo` fixture, a DemoWebThread, says which web), a GET sent on a raw socket, and the demo
web's command line."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class DemoWebClient(httpx.Client):
    """An httpx client to a demo web on 127.0.0.1 (trust_env=False: never through a proxy from
    the environment). The *_url methods send an absolute demo URL there with its Host header."""

    def __init__(self, port: int):
        super().__init__(base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=5)

    @staticmethod
    def target(url: str) -> tuple[str, dict[str, str]]:
        """(path with query, Host header) for sending an absolute demo URL to 127.0.0.1."""
        parts = urlsplit(url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), {"Host": parts.netloc}

    def get_url(self, url: str, **kwargs) -> httpx.Response:
        path, headers = self.target(url)
        return self.get(path, headers=headers, **kwargs)

    def head_url(self, url: str, **kwargs) -> httpx.Response:
        path, headers = self.target(url)
        return self.head(path, headers=headers, **kwargs)

    def stream_url(self, url: str, **kwargs):
        path, headers = self.target(url)
        return self.stream("GET", path, headers=headers, **kwargs)


@pytest.fixture
def client(demo) -> Iterator[DemoWebClient]:
    """A client of its own for each test, to the module's served demo web."""
    with DemoWebClient(demo.port) as c:
        yield c


@pytest.fixture
def send_get():
    """send_get(port, url): a socket to the demo web on 127.0.0.1:port that has sent a GET of
    the absolute demo URL and read nothing back (the caller closes it)."""

    def send(port: int, url: str) -> socket.socket:
        path, headers = DemoWebClient.target(url)
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {headers['Host']}\r\n\r\n".encode())
        return sock

    return send


@pytest.fixture
def demoweb_cli():
    """Runs `python -m demoweb ARGS` from the project root: the finished process, its output
    as text (check=True: a failing command fails the test)."""

    def run(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "demoweb", *args], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, check=check, **kwargs)

    return run
