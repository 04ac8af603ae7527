"""simhash_index[D]: the SimHash fingerprints of every page fetched up to day D and their
near-duplicate pairs; near_duplicate_clusters[D]: groups of pages within the threshold, a
representative for each, and each host's near-duplicate and copy ratios, which tomorrow's fetch
batches use to demote hosts, and the URL aliases each host's answers taught (alias_learning.py),
which tomorrow's frontier and batches fold URLs by."""

from dagster import AssetExecutionContext, AssetKey, Config, MaterializeResult, MetadataValue, asset

from ...pipeline.dedup_step import (
    build_clusters,
    build_simhash_index,
    dedup_inputs,
    links_inputs,
    load_simhash_index,
    warc_text_reader,
)
from ...pipeline.alias_rules.alias_learning import learn_url_aliases, previous_aliases
from ...storage.layout import (
    fingerprints_file,
    host_dup_ratio_file,
    near_clusters_file,
    near_pairs_file,
    url_aliases_file,
    write_parquet_atomic,
)
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="dedup", partitions_def=daily_partitions, deps=[AssetKey("fetch_log")])
@fails_with_crawl_errors
def simhash_index(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Fingerprints of every page fetched so far and their near-duplicate pairs (permuted blocks)."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    index = build_simhash_index(settings, dedup_inputs(root, date))
    write_parquet_atomic(index.fingerprints, fingerprints_file(root, date))
    write_parquet_atomic(index.pairs, near_pairs_file(root, date))
    return MaterializeResult(metadata={
        "fingerprints": index.counts.fingerprints,
        "near_pairs": index.counts.near_pairs,
        "threshold": settings.near_dup_threshold,
        "path": MetadataValue.path(str(near_pairs_file(root, date))),
    })


class ClusterConfig(Config):
    confirm_with_minhash: bool = False  # re-read candidate pages from the WARCs and check Jaccard
    min_jaccard: float = 0.8


@asset(group_name="dedup", partitions_def=daily_partitions, deps=[AssetKey("simhash_index"),
                                                                     AssetKey("warc_archive"), AssetKey("links")])
@fails_with_crawl_errors
def near_duplicate_clusters(context: AssetExecutionContext, config: ClusterConfig,
                            crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Groups of pages within the SimHash threshold, with a representative page for each (the
    first fetched), and the per-host near-duplicate and copy ratios (copies: near-duplicates
    whose own links are alike too; the trap defences demote on the copy ratio)."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    fingerprints, pairs = load_simhash_index(root, date)
    text_of = warc_text_reader(root, fingerprints.to_pylist()) if config.confirm_with_minhash else None
    result = build_clusters(settings, fingerprints, pairs, text_of, config.min_jaccard, links_inputs(root, date))
    write_parquet_atomic(result.clusters, near_clusters_file(root, date))
    write_parquet_atomic(result.host_quality, host_dup_ratio_file(root, date))
    aliases = learn_url_aliases([str(p) for p in dedup_inputs(root, date)], date, previous_aliases(root, date))
    write_parquet_atomic(aliases, url_aliases_file(root, date))
    return MaterializeResult(metadata={
        **vars(result.counts),
        "url_alias_rules_active": sum(aliases["active"].to_pylist()),
        "near_duplicate_share": result.counts.near_duplicate_share,
        "path": MetadataValue.path(str(near_clusters_file(root, date))),
    })
