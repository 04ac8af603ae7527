"""A two-day demo crawl shared by the analyst-output tests (indexes, look-ups, replay, catalog)."""

import contextlib
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from dagster import DagsterInstance

from crawl_assets.cli.cycle import run_cycle
from crawl_assets.crawler.settings import PROJECT_ROOT, CrawlSettings

from support import DemoWebProcess, write_test_settings

DAY1, DAY2 = "2026-11-28", "2026-11-29"
# pywb lives in a venv of its own (`make replay-tools`, see the Makefile for why).
PYWB_BIN = PROJECT_ROOT / ".tools" / "pywb" / "bin"
WAYBACK_START_TIMEOUT_S = 30


@dataclass(frozen=True)
class TwoDayCrawl:
    settings: CrawlSettings
    web: object  # the DemoWeb that was crawled
    access_log: Path  # the demo web's log of both days' requests

    @property
    def root(self) -> Path:
        return self.settings.data_root

    def warcs(self, date: str | None = None) -> list[Path]:
        pattern = f"warc/date={date or '*'}/shard=*/*.warc.gz"
        return sorted(self.root.glob(pattern))


@pytest.fixture(scope="session")
def two_day_crawl(tmp_path_factory) -> TwoDayCrawl:
    """Two recrawl cycles of a small demo web that does not change between them,
    so day two answers 304 for every page it saw on day one; the near-duplicate hosts serve
    byte-identical mirrors, archived as identical-payload revisits."""
    folder = tmp_path_factory.mktemp("analyst")
    with DemoWebProcess(seed=7, hosts=6, pages_per_host=12, near_duplicates=True, traps=True,
                        access_log=folder / "access_log.parquet") as server:
        resource = write_test_settings(folder, server.web, seed_hosts=3)
        with DagsterInstance.ephemeral() as instance:
            run_cycle(DAY1, instance, resource)
            run_cycle(DAY2, instance, resource)
        web = server.web
    return TwoDayCrawl(resource.load(), web, folder / "access_log.parquet")


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
