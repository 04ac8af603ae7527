"""simhash_index[D]: the SimHash fingerprints of every page fetched up to day D, joined on
permuted-block keys into near-duplicate pairs (no all-pairs comparison).
near_duplicate_clusters[D]: groups of pages within the threshold, a representative for each,
and each host's near-duplicate ratio, which tomorrow's fetch batches use to demote hosts."""

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from dagster import AssetExecutionContext, AssetKey, Config, MaterializeResult, MetadataValue, asset

from ..crawler.minhash_check import jaccard, text_from_warc
from ..crawler.simhash import clusters, near_duplicate_pairs
from ..layout import (
    fingerprints_file,
    glob_of,
    has_partition_files,
    host_dup_ratio_file,
    near_clusters_file,
    near_pairs_file,
    warc_dir,
    write_parquet_atomic,
)
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource

# Each URL's latest fingerprint: what the page says now.
FINGERPRINTS_SQL = """
SELECT url, host, simhash, fetched_at, CAST(date AS VARCHAR) AS date, shard, warc_file, warc_offset,
       refers_to
FROM read_parquet($glob, hive_partitioning = true, union_by_name = true)
WHERE CAST(date AS DATE) <= CAST($date AS DATE) AND simhash IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1
ORDER BY url
"""

HOST_RATIO_SQL = """
SELECT host, count(*) AS pages,
       count(*) FILTER (WHERE url <> representative) AS near_duplicates,
       round(near_duplicates / pages, 4) AS near_duplicate_ratio
FROM clusters GROUP BY host ORDER BY host
"""


@asset(group_name="dedup", partitions_def=daily_partitions, deps=[AssetKey("fetch_batch")])
def simhash_index(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Fingerprints of every page fetched so far and their near-duplicate pairs (permuted blocks)."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    if not has_partition_files(root, "fetch_log"):
        raise FileNotFoundError(f"no fetch logs under {root / 'fetch_log'}: materialise fetch_batch first")
    prints = duckdb.connect().sql(FINGERPRINTS_SQL, params={"glob": glob_of(root, "fetch_log"), "date": date})
    prints = prints.to_arrow_table()
    fps = prints.column("simhash").to_numpy(zero_copy_only=False).astype(np.uint64)
    pairs = near_duplicate_pairs(np.arange(len(fps), dtype=np.int64), fps, settings.near_dup_threshold)
    urls = prints.column("url")
    table = pa.table({"url_a": urls.take(pa.array(pairs.a)), "url_b": urls.take(pa.array(pairs.b)),
                      "distance": pa.array(pairs.distance, pa.int8())})
    write_parquet_atomic(prints, fingerprints_file(root, date))
    write_parquet_atomic(table, near_pairs_file(root, date))
    return MaterializeResult(metadata={
        "fingerprints": prints.num_rows,
        "near_pairs": table.num_rows,
        "threshold": settings.near_dup_threshold,
        "path": MetadataValue.path(str(near_pairs_file(root, date))),
    })


class ClusterConfig(Config):
    confirm_with_minhash: bool = False  # re-read candidate pages from the WARCs and check Jaccard
    min_jaccard: float = 0.8


@asset(group_name="dedup", partitions_def=daily_partitions, deps=[AssetKey("simhash_index")])
def near_duplicate_clusters(context: AssetExecutionContext, config: ClusterConfig,
                            crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Groups of pages within the SimHash threshold, with a representative page for each (the
    first fetched), and the per-host near-duplicate ratio the trap defences read."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    prints = pq.read_table(fingerprints_file(root, date)).to_pylist()
    pairs = pq.read_table(near_pairs_file(root, date)).to_pylist()
    index = {row["url"]: i for i, row in enumerate(prints)}
    rejected = 0
    if config.confirm_with_minhash:
        kept = []
        for pair in pairs:
            a, b = prints[index[pair["url_a"]]], prints[index[pair["url_b"]]]
            if jaccard(_text(root, a, prints, index), _text(root, b, prints, index)) >= config.min_jaccard:
                kept.append(pair)
        rejected, pairs = len(pairs) - len(kept), kept
    representative = clusters([(index[p["url_a"]], index[p["url_b"]]) for p in pairs], range(len(prints)),
                              prefer=lambda i: (prints[i]["fetched_at"], prints[i]["url"]))
    members = np.bincount(list(representative.values()), minlength=len(prints))
    table = pa.table({
        "url": [row["url"] for row in prints],
        "host": [row["host"] for row in prints],
        "representative": [prints[representative[i]]["url"] for i in range(len(prints))],
        "cluster_size": [int(members[representative[i]]) for i in range(len(prints))],
    })
    write_parquet_atomic(table, near_clusters_file(root, date))
    con = duckdb.connect()
    con.register("clusters", table)
    ratios = con.sql(HOST_RATIO_SQL).to_arrow_table()
    write_parquet_atomic(ratios, host_dup_ratio_file(root, date))
    groups = sum(1 for i in range(len(prints)) if representative[i] == i and members[i] > 1)
    return MaterializeResult(metadata={
        "pages": len(prints),
        "groups": groups,
        "pages_in_groups": int(sum(members[members > 1])),
        "near_pairs": len(pairs),
        "pairs_rejected_by_minhash": rejected,
        "hosts_over_demotion_ratio": sum(
            1 for r in ratios.to_pylist()
            if r["near_duplicate_ratio"] >= settings.demote_near_dup_ratio and r["pages"] >= 10),
        "path": MetadataValue.path(str(near_clusters_file(root, date))),
    })


def _text(root, row, prints, index) -> str:
    """A page's main text from its WARC record; a revisit record's from the capture it refers to."""
    if row["refers_to"] in index:
        row = prints[index[row["refers_to"]]]
    return text_from_warc(warc_dir(root, row["date"], row["shard"]) / row["warc_file"], row["warc_offset"])
