"""Loaded at start-up by every Python process of the test deployment (tests/dagster_deployment.py
puts this folder on PYTHONPATH). Two test-only paces, each changing when Dagster's processes
act, not what they do:

- In the daemon, when RECRAWL_TEST_BACKFILL_INTERVAL_S is set, the backfill loop looks every
  that many seconds instead of Dagster's fixed 30: a two-day backfill waits on that loop once per
  stage of every day. Dagster reads the constant when the loop starts, so setting it here is
  enough.
- In the code server (`dagster api grpc`), when RECRAWL_TEST_PRELOAD_RUNS is set, each run's
  process is forked from a server that has already imported the project's definitions, instead
  of spawned as a fresh interpreter that imports Dagster and the project again (about 3 s of CPU
  a run, and the daemon waits for it before launching the next). The run's process then runs
  the same code from the same reconstructable job."""

import os
import sys

_interval = os.environ.get("RECRAWL_TEST_BACKFILL_INTERVAL_S")
if _interval and "dagster._daemon" in sys.orig_argv:
    import dagster._daemon.controller as daemon_controller

    daemon_controller.DEFAULT_DAEMON_INTERVAL_SECONDS = float(_interval)

_preload = os.environ.get("RECRAWL_TEST_PRELOAD_RUNS")
if _preload and sys.orig_argv[1:5] == ["-m", "dagster", "api", "grpc"]:
    import multiprocessing

    import dagster._grpc.server as grpc_server

    _forkserver = multiprocessing.get_context("forkserver")
    _forkserver.set_forkserver_preload(_preload.split(","))
    _init = grpc_server.DagsterApiServer.__init__

    def _init_with_forkserver(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        self._mp_ctx = _forkserver

    grpc_server.DagsterApiServer.__init__ = _init_with_forkserver
