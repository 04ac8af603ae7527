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
from .registry import seen_url_filter, url_registry

ALL_ASSETS = [seeds, frontier_snapshot, shard_frontier, fetch_batch, url_registry, seen_url_filter,
              simhash_index, near_duplicate_clusters, change_stats, recrawl_priorities, crawl_catalog, day_report,
              priority_part, crawl_price, shard_priorities]
