"""fetch_batch[D, shard]: fetch the shard's frontier politely; WARC files, fetch log, links."""

import warnings
from collections import Counter

import duckdb
import pyarrow.parquet as pq
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetDep,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    asset,
)

from ..crawler.batch import run_fetch_batch
from ..crawler.workbench import FetchTask
from ..crawler.seen_filter import load_filter
from ..crawler.warc import warc_date
from ..crawler.tables import dropped_table, fetch_log_table, links_table
from ..layout import (
    columns_of,
    dropped_file,
    fetch_log_file,
    frontier_file,
    glob_of,
    has_partition_files,
    latest_before,
    links_file,
    warc_dir,
    write_parquet_atomic,
)
from ..partitions import fetch_partitions, split_fetch_key
from ..resources import CrawlSettingsResource


with warnings.catch_warnings():  # the mapping is marked beta; it is the documented way to do this
    warnings.simplefilter("ignore")
    DATE_OF_FETCH_PARTITION = MultiToSingleDimensionPartitionMapping(partition_dimension_name="date")


@asset(
    group_name="fetch",
    partitions_def=fetch_partitions,
    deps=[AssetDep(AssetKey("frontier_snapshot"), partition_mapping=DATE_OF_FETCH_PARTITION)],
)
def fetch_batch(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Fetches every frontier URL of one host shard for one day, one request in flight per host."""
    settings = crawl_settings.load()
    date, shard = split_fetch_key(context.partition_key)
    root = settings.data_root
    frontier_path = frontier_file(root, date, shard)
    if not frontier_path.exists():
        raise FileNotFoundError(f"{frontier_path} is missing: materialise frontier_snapshot for {date} first")
    frontier = pq.read_table(frontier_path).to_pylist()
    tasks = [FetchTask(row["url"], row["host"], row["depth"], row["priority"], etag=row["etag"],
                       last_modified=row["last_modified"], last_captured_at=row.get("last_captured_at"))
             for row in frontier]

    out_dir = warc_dir(root, date, shard)
    previous_warcs = sorted(out_dir.glob("*.warc.gz"))
    prefix = f"recrawl-{date}-{shard}-{context.run_id[:8]}"
    seen_path = latest_before(root, "seen_filter", date)  # what the crawl knew before today
    seen = load_filter(seen_path) if seen_path else None
    demoted = demoted_hosts(root, date, settings.demote_near_dup_ratio)
    result = run_fetch_batch(settings, int(shard.lstrip("s")), tasks, out_dir, prefix, seen=seen,
                             known_payloads=archived_payloads(root, date), demoted_hosts=demoted)

    fetch_log = fetch_log_table(result.output.records)
    links = links_table(result.output.links)
    write_parquet_atomic(fetch_log, fetch_log_file(root, date, shard))
    write_parquet_atomic(links, links_file(root, date, shard))
    dropped = dropped_table(result.output.dropped)
    write_parquet_atomic(dropped, dropped_file(root, date, shard))
    # The new fetch log points at the new WARC files only. Archives of earlier runs of this
    # partition are kept (nothing crawled is lost) but moved aside, out of the day's glob.
    superseded = out_dir / "superseded"
    for old in previous_warcs:
        if old not in result.warc_files:
            superseded.mkdir(exist_ok=True)
            old.rename(superseded / old.name)

    frontier_urls = {t.url for t in tasks}
    status_classes = Counter(r.status_class for r in result.output.records)
    statuses = Counter(str(r.status) for r in result.output.records if r.status is not None)
    return MaterializeResult(metadata={
        "frontier_urls": len(tasks),
        "fetched": fetch_log.num_rows,
        "discovered_in_batch": sum(r.url not in frontier_urls for r in result.output.records),
        "hosts": len({r.host for r in result.output.records}),
        "links": links.num_rows,
        "new_links": sum(1 for link in result.output.links if link[4]),
        "revisit_records": sum(r.warc_type == "revisit" for r in result.output.records),
        "demoted_hosts": len(demoted),
        "urls_dropped": sum(dropped.column("urls").to_pylist()),
        "urls_dropped_by_reason": MetadataValue.json(_by_reason(result.output.dropped)),
        "seen_filter": MetadataValue.path(str(seen_path) if seen_path else "none yet"),
        "bytes": sum(r.bytes for r in result.output.records),
        "status_classes": MetadataValue.json(dict(status_classes)),
        "http_statuses": MetadataValue.json(dict(statuses)),
        "warc_files": MetadataValue.json([str(p) for p in result.warc_files]),
        "warc_bytes": sum(p.stat().st_size for p in result.warc_files),
        "fetch_log": MetadataValue.path(str(fetch_log_file(root, date, shard))),
    })


KNOWN_PAYLOADS_SQL = """
SELECT payload_digest, arg_min(url, fetched_at), min(fetched_at)
FROM read_parquet($glob, hive_partitioning = true, union_by_name = true)
WHERE CAST(date AS DATE) < CAST($date AS DATE) AND warc_type = 'response' AND payload_digest IS NOT NULL
GROUP BY payload_digest
"""


MIN_PAGES_TO_DEMOTE = 10


def demoted_hosts(root, date: str, ratio: float) -> frozenset[str]:
    """Hosts whose pages were mostly near-duplicates at the last count before `date`."""
    path = latest_before(root, "host_quality", date)
    if path is None:
        return frozenset()
    rows = pq.read_table(path).to_pylist()
    return frozenset(r["host"] for r in rows
                     if r["near_duplicate_ratio"] >= ratio and r["pages"] >= MIN_PAGES_TO_DEMOTE)


def archived_payloads(root, date: str) -> dict[str, tuple[str, str]]:
    """Payload digest -> (URI, WARC-Date) of the first full capture of every payload archived
    before `date`, so a copy fetched today becomes a revisit record.

    Held in memory: fine for this crawl's size; a much larger archive would want a Bloom
    filter in front of an on-disk index instead."""
    glob = glob_of(root, "fetch_log")
    if not has_partition_files(root, "fetch_log") or "warc_type" not in columns_of(glob):
        return {}  # nothing archived yet, or only by a version without payload digests
    rows = duckdb.connect().execute(KNOWN_PAYLOADS_SQL, {"glob": glob, "date": date}).fetchall()
    return {digest: (url, warc_date(first)) for digest, url, first in rows}


def _by_reason(dropped: dict) -> dict[str, dict[str, int]]:
    """reason -> {host: URLs dropped}, the hosts that lost the most first."""
    table: dict[str, dict[str, int]] = {}
    for host, reasons in dropped.items():
        for reason, count in reasons.items():
            table.setdefault(reason, {})[host] = count
    return {r: dict(sorted(h.items(), key=lambda kv: -kv[1])[:20]) for r, h in sorted(table.items())}
