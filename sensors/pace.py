"""How often the day-chain sensors look for a landed frontier or a finished fetch: every 30 s,
or every RECRAWL_SENSOR_INTERVAL_S seconds where the environment of `dagster dev` (or the
daemon) sets it. A shorter interval chains a day's runs sooner at the cost of more event-log
reads; the test deployment looks every 5 s."""

import os

DAY_CHAIN_INTERVAL_S = int(os.environ.get("RECRAWL_SENSOR_INTERVAL_S", "30"))
