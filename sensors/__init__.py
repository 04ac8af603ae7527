"""Sensors of the recrawl pipeline: they chain a day's stages when nobody drives them (the
nightly schedule, a launch from the UI). They import from crawl_assets; only
crawl_assets/definitions.py imports them."""

from crawl_assets.defs.partitions import DAY_PER_SHARD

from .day_chain import close_day_after_fetch, fetch_after_frontier
from .priorities_chain import PRIORITIES_SENSORS
from .seed_changes import seed_files_changed

# (the priorities per shard's stages only where the close leaves the priorities to them)
ALL_SENSORS = [seed_files_changed, fetch_after_frontier, close_day_after_fetch,
               *(PRIORITIES_SENSORS if DAY_PER_SHARD else [])]
