"""The demo web in its own process: the one way the demo, the tests and the benchmarks start it.

    with DemoWebProcess(hosts=10, pages_per_host=20, traps=True) as server:   # port 0: a free port
        server.port, server.address, server.web   # web: the DemoWeb it serves, with its port
        ...
        rows = server.stop()                      # the access log, one dict per request

A separate process keeps the server off the crawler's GIL: a server thread sharing it stamps
its access-log times late by up to a thread switch interval, and a late `end` makes a correct
politeness gap look too short. The child is `python -m demoweb serve`; it binds
127.0.0.1 only, prints one READY_PREFIX line once it accepts connections, and writes its
access log (Parquet) when it gets SIGTERM.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .server import BIND_ADDRESS
from .web import DemoWeb

READY_PREFIX = "demoweb listening on "
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class DemoWebStartError(RuntimeError):
    """The demo web process exited or stayed silent instead of listening."""


class DemoWebProcess:
    """`web_args` are DemoWeb's: seed, hosts, pages_per_host, day, domain and the plug-in
    keywords (hostile=True, ...). port=0 picks a free port. access_log: where the child
    writes its log on stop (default: a temporary file, removed once read)."""

    def __init__(self, *, port: int = 0, access_log: str | Path | None = None,
                 stderr_path: str | Path | None = None, start_timeout: float = START_TIMEOUT_S,
                 **web_args):
        DemoWeb(port=port, **web_args)  # bad arguments fail here, with DemoWeb's message
        self.web_args = dict(web_args)
        self.requested_port = port
        self.start_timeout = start_timeout
        self._tmpdir: Path | None = None
        if access_log is None:
            self._tmpdir = Path(tempfile.mkdtemp(prefix="demoweb-"))
            access_log = self._tmpdir / "access_log.parquet"
        self.access_log_path = Path(access_log)
        self.stderr_path = Path(stderr_path) if stderr_path else None
        self.ready_line = ""
        self.web: DemoWeb | None = None
        self._process: subprocess.Popen | None = None
        self._rows: list[dict] | None = None

    def command(self) -> list[str]:
        args = [sys.executable, "-m", "demoweb", "serve", "--port", str(self.requested_port),
                "--access-log", str(self.access_log_path)]
        for name, value in self.web_args.items():
            flag = f"--{name.replace('_', '-')}"
            args += [flag] if value is True else [] if value is False else [flag, str(value)]
        return args

    # ---- lifecycle --------------------------------------------------------------------

    def start(self) -> "DemoWebProcess":
        """Start the child and wait for its ready line (at most start_timeout seconds)."""
        if self._process is not None:
            raise RuntimeError("this demo web process was already started")
        stderr_file = (open(self.stderr_path, "ab") if self.stderr_path
                       else tempfile.TemporaryFile())
        with stderr_file:
            self._process = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=stderr_file,
                                             text=True)
            # A watchdog, so a child that never prints its line cannot hang the caller.
            watchdog = threading.Timer(self.start_timeout, self._process.kill)
            watchdog.start()
            try:
                line = self._process.stdout.readline()
            finally:
                watchdog.cancel()
            if not line.startswith(READY_PREFIX):
                self._process.kill()
                self._process.wait()
                stderr_file.seek(0)
                detail = stderr_file.read().decode("utf-8", "replace").strip()[-2000:]
                raise DemoWebStartError(
                    f"the demo web did not start (exit {self._process.returncode}, port "
                    f"{self.requested_port}): {detail or line.strip() or 'no output'}")
        self.ready_line = line.strip()
        port = int(line[len(READY_PREFIX):].split()[0].rsplit(":", 1)[1])
        self.web = DemoWeb(port=port, **self.web_args)
        return self

    @property
    def port(self) -> int:
        if self.web is None:
            raise RuntimeError("demo web process not started")
        return self.web.port

    @property
    def address(self) -> str:
        """'127.0.0.1:PORT', where every demo host is served."""
        return f"{BIND_ADDRESS}:{self.port}"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("demo web process not started")
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The child's exit status once it ended (0 after a clean stop), else None."""
        return None if self._process is None else self._process.poll()

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> list[dict]:
        """Stop the child (SIGTERM, then kill after `timeout`); its access log, one dict per
        request (the same rows on every later call)."""
        if self._rows is not None:
            return self._rows
        process = self._process
        if process is None:
            raise RuntimeError("demo web process not started")
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
        self._rows = self._read_log()
        return self._rows

    def _read_log(self) -> list[dict]:
        if not self.access_log_path.exists():
            return []
        import pyarrow.parquet as pq

        rows = pq.read_table(self.access_log_path).to_pylist()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        return rows

    def __enter__(self) -> "DemoWebProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        if self._process is not None:
            self.stop()


def start_demoweb(**kwargs) -> DemoWebProcess:
    """DemoWebProcess(**kwargs).start(): the demo web in its own process, listening."""
    return DemoWebProcess(**kwargs).start()
