"""How often the day-chain sensors look for a landed frontier or a finished fetch: every 30 s,
or every RECRAWL_SENSOR_INTERVAL_S seconds where the environment of `dagster dev` (or the
daemon) sets it. A shorter interval chains a day's runs sooner at the cost of more event-log
reads; the test deployment looks every 5 s. The seed-file sensor looks half as often (60 s)."""

import os

INTERVAL_ENV = "RECRAWL_SENSOR_INTERVAL_S"


def day_chain_interval_s(env=os.environ) -> int:
    """The interval in whole seconds (at least 1); anything else is a clear error naming the variable."""
    text = env.get(INTERVAL_ENV, "30")
    if not text.strip().isdigit() or int(text) < 1:
        raise ValueError(f"{INTERVAL_ENV}={text!r}: give the day-chain sensors' interval as whole seconds, "
                         "at least 1 (or unset it for 30)")
    return int(text)


DAY_CHAIN_INTERVAL_S = day_chain_interval_s()
SEED_INTERVAL_S = 2 * DAY_CHAIN_INTERVAL_S
