"""PostgreSQL and Redis from Debian's packages, started by a test as its own processes on
loopback in a temporary folder and stopped after it; nothing is left running or installed
as a service. `make system-packages` installs the packages when they are missing."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(ready, process: subprocess.Popen, what: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: see {log}:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)


@contextmanager
def postgres_server():
    """A fresh cluster with one database `dagster`; yields its URL. The server refuses to run
    as root, so under root it runs as Debian's `postgres` user, in a folder that user owns."""
    binaries = postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="recrawl-pg-"))
    as_user = "postgres" if os.geteuid() == 0 else None
    if as_user:
        shutil.chown(folder, as_user)
    data, log = folder / "data", folder / "postgres.log"
    port = free_port()
    subprocess.run([binaries / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                    "--no-sync"], user=as_user, check=True, capture_output=True, cwd=folder)
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [binaries / "postgres", "-D", data, "-h", "127.0.0.1", "-p", str(port), "-k", folder,
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=200"],
            user=as_user, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
    try:
        address = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        wait_until(lambda: subprocess.run([binaries / "pg_isready", *address], capture_output=True).returncode == 0,
                   server, "postgres", log)
        subprocess.run([binaries / "createdb", *address, "dagster"], check=True, capture_output=True)
        # psycopg2: the driver dagster-postgres installs (SQLAlchemy 2.1 takes psycopg 3 for postgresql://).
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/dagster"
    finally:
        stop(server, signal.SIGINT)  # fast shutdown
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def redis_server():
    """A Redis on loopback without persistence; yields its URL."""
    folder = Path(tempfile.mkdtemp(prefix="recrawl-redis-"))
    port, log = free_port(), folder / "redis.log"
    server = subprocess.Popen(
        [shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(folder), "--logfile", str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    log.touch()

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_until(answers, server, "redis-server", log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop(server)
        shutil.rmtree(folder, ignore_errors=True)
