"""Thin Dagster wrappers around the crawler core, one module per asset family."""

from .catalog import crawl_catalog
from .change_stats import change_stats
from .priorities import recrawl_priorities
from .day_report import day_report
from .fetch import fetch_batch
from .frontier import frontier_snapshot, shard_frontier
from .dedup import near_duplicate_clusters, simhash_index
from .seeds import seeds
from .priorities_per_shard import crawl_price, priority_part, shard_priorities
from .registry import seen_url_filter, shard_seen_filter, url_registry
from ..partitions import DAY_PER_SHARD

# A day per shard: each shard's frontier in its fetch run, its seen filter in a step of its own,
# the priorities in three stages in recrawl_priorities' place (settings.day_per_shard); else
# the frontier and the priorities in one step each.
ALL_ASSETS = [seeds, frontier_snapshot, fetch_batch, url_registry, seen_url_filter, simhash_index,
              near_duplicate_clusters, change_stats, crawl_catalog, day_report,
              *([shard_frontier, shard_seen_filter, priority_part, crawl_price, shard_priorities] if DAY_PER_SHARD
                else [recrawl_priorities])]
