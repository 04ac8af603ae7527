"""Loaded at start-up by every Python process of the test deployment (tests/dagster_deployment.py
puts this folder on PYTHONPATH). In the daemon's process, when RECRAWL_TEST_BACKFILL_INTERVAL_S
is set, the backfill loop looks every that many seconds instead of Dagster's fixed 30: a
three-day backfill waits on that loop once per stage of every day (12 minutes at 30 s).
Dagster reads the constant when the loop starts, so setting it here is enough."""

import os
import sys

_interval = os.environ.get("RECRAWL_TEST_BACKFILL_INTERVAL_S")
if _interval and "dagster._daemon" in sys.orig_argv:
    import dagster._daemon.controller as daemon_controller

    daemon_controller.DEFAULT_DAEMON_INTERVAL_SECONDS = float(_interval)
