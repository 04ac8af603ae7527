"""The registry step: every URL discovered up to day D (the authoritative record), and the
seen-URL Bloom filter rebuilt from it, which the next day's fetch batches load. A page has one
URL across schemes: the http URLs of hosts known to serve https are kept as https only.

Inputs are explicit: the seed table, and the links and fetch logs of every day up to and
including D (`crawl_history.history_through` lists them).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from rbloom import Bloom

from ..crawler.crawl_errors import CrawlInputError
from ..crawler.url_policy.url_bloom import DEFAULT_FP_RATE, FP_SAMPLE_SIZE, build_filter, measured_fp_rate
from ..crawler.url_policy.sharding import shard_index, shard_key, shard_of
from ..crawler.url_policy.urls import host_of, upgrade_sql
from ..storage.layout import url_registry_file
from ..storage.shared_root import connect, query_connection
from .crawl_history import CrawlHistory, https_hosts


@dataclass(frozen=True)
class RegistryCounts:
    urls: int
    never_fetched: int


@dataclass(frozen=True)
class RegistryResult:
    table: pa.Table  # url, first_seen, depth, discovered_from, last_fetched; ordered by url
    counts: RegistryCounts


REGISTRY_SQL = """
WITH
-- found: every sighting of a URL: the seeds (counted from the registry's own day) and each
-- link target on the day its links file was written, with the page that linked it.
-- (a URL of a host known to serve https is taken as https: one URL per page across schemes)
found AS (
    SELECT {seed_url} AS url, CAST($date AS DATE) AS day, NULL::VARCHAR AS source, 0 AS depth FROM read_parquet($seeds)
    {links_part}
),
-- fetched: each URL's latest answered fetch (a failed request answers nothing).
fetched AS (
    {fetched_part}
)
SELECT found.url, min(found.day) AS first_seen, min(found.depth)::INTEGER AS depth,
       -- the earliest day's linking page; of pages linking it that day, the first by URL, so
       -- the answer does not depend on which fetch finished first (a backfill equals the nights)
       arg_min(found.source, (found.day, found.source)) AS discovered_from,
       any_value(fetched.last_fetched) AS last_fetched
FROM found LEFT JOIN fetched USING (url)
GROUP BY found.url
ORDER BY found.url
"""

LINKS_PART = """
    UNION ALL
    SELECT {target_url}, CAST(date AS DATE), source, depth
    FROM read_parquet($links, hive_partitioning = true)
"""

FETCHED_PART = """
    SELECT url, max(fetched_at) AS last_fetched
    FROM read_parquet($fetch_logs, union_by_name = true)
    WHERE status IS NOT NULL
    GROUP BY url
"""
NOTHING_FETCHED = "SELECT NULL::VARCHAR AS url, NULL::TIMESTAMPTZ AS last_fetched WHERE false"


def build_registry(date: str, inputs: CrawlHistory) -> RegistryResult:
    """One row per URL discovered up to `date`: first seen, depth, discovered from, last fetched."""
    params: dict = {"seeds": str(inputs.seeds), "date": date}
    if inputs.links:
        params["links"] = [str(p) for p in inputs.links]
    if inputs.fetch_logs:
        params["fetch_logs"] = [str(p) for p in inputs.fetch_logs]
    con = query_connection()
    https = https_hosts(inputs.fetch_logs)
    url_of = upgrade_sql if https else str
    if https:
        con.register("https_hosts", pa.table({"host": sorted(https)}))
    sql = REGISTRY_SQL.format(links_part=LINKS_PART.format(target_url=url_of("target")) if inputs.links else "",
                              fetched_part=FETCHED_PART if inputs.fetch_logs else NOTHING_FETCHED,
                              seed_url=url_of("url"))
    table = con.sql(sql, params=params).to_arrow_table()
    return RegistryResult(table, RegistryCounts(table.num_rows, table.column("last_fetched").null_count))


def registry_path(root: Path, date: str) -> Path:
    """The day's registry file (CrawlInputError naming the asset to materialise when missing)."""
    path = url_registry_file(root, date)
    if not path.exists():
        raise CrawlInputError(f"{path} is missing: materialise url_registry for {date} first")
    return path


def load_registry_urls(root: Path, date: str) -> pa.Table:
    """The url column of the day's registry: what the seen filter is built from."""
    path = registry_path(root, date)
    return query_connection().sql("SELECT url FROM read_parquet($path)", params={"path": str(path)}).to_arrow_table()


@dataclass(frozen=True)
class SeenFilterCounts:
    elements: int
    bits: int
    target_fp_rate: float
    measured_fp_rate: float  # on FP_SAMPLE_SIZE made-up URLs never added


def build_seen_filter(registry: pa.Table, fp_rate: float = DEFAULT_FP_RATE) -> Bloom:
    """A Bloom filter of every URL in the registry. A false positive means a URL wrongly
    taken for known, a page that may never be fetched: hence a low rate."""
    urls = registry.column("url").to_pylist()
    return build_filter(urls, len(urls), fp_rate)


def build_shard_seen_filters(registry: pa.Table | Path, shard_count: int,
                             fp_rate: float = DEFAULT_FP_RATE) -> dict[str, Bloom]:
    """A Bloom filter per shard of the registry's URLs of that shard's hosts (every shard,
    one without URLs too): a fetch batch loads its own shard's, 1/shard_count of the crawl's.
    registry: its url column, or its file."""
    return {shard_key(n): build_filter(urls, len(urls), fp_rate)
            for n, urls in urls_by_shard(registry, shard_count).items()}


def build_shard_seen_filter(registry: pa.Table | Path, shard: str, shard_count: int,
                            fp_rate: float = DEFAULT_FP_RATE) -> Bloom:
    """build_shard_seen_filters' filter of one shard (a day per shard builds each in its own
    step, from the registry's file: only the shard's URLs come out of DuckDB)."""
    urls = urls_by_shard(registry, shard_count, only=shard_index(shard))[shard_index(shard)]
    return build_filter(urls, len(urls), fp_rate)


# A URL up to the end of its authority: before the first "/" after its first "://", which is
# all of it urls.host_of reads (urls.split_url; a URL without "://" has no host, nor has any
# part of it). DuckDB cuts it from each URL, and Python finds the shard of each distinct one's
# host (origin_shards): a call per batch of URLs, the host's shard computed once a host.
# (String functions: a regular expression took three times as long.)
ORIGIN_SQL = "left(url, strpos(url, '://') + 2 + strpos(substr(url, strpos(url, '://') + 3) || '/', '/') - 1)"
SHARD_URLS_SQL = f"SELECT origin_shard({ORIGIN_SQL}) AS shard, url FROM {{registry}} {{only}}"
# DuckDB's memory for reading the registry (beyond it, it spills); a shard's URLs come out
# as Arrow, then as the Python strings the filter takes.
MEMORY_LIMIT = "2GB"


def urls_by_shard(registry: pa.Table | Path, shard_count: int, only: int | None = None) -> dict[int, list[str]]:
    """The registry's URLs by their host's shard number (every shard, or `only`); registry:
    its url column, or its file (read by DuckDB where it lies, in one pass)."""
    con = connect(config={"memory_limit": MEMORY_LIMIT})
    con.create_function("origin_shard", origin_shards(shard_count), ["VARCHAR"], "INTEGER", type="arrow")
    try:
        if isinstance(registry, pa.Table):
            con.register("registry_urls", registry.select(["url"]))
            source, params = "registry_urls", {}
        else:
            source, params = "read_parquet($registry)", {"registry": str(registry)}
        rows = con.sql(SHARD_URLS_SQL.format(registry=source, only="" if only is None else
                                             f"WHERE origin_shard({ORIGIN_SQL}) = $only"),
                       params=params | ({} if only is None else {"only": only})).to_arrow_table()
    finally:
        con.close()
    numbers = [only] if only is not None else range(shard_count)
    return {n: rows["url"].filter(pc.equal(rows["shard"], n)).to_pylist() for n in numbers}


def origin_shards(shard_count: int):
    """The shard numbers of a batch of origins (ORIGIN_SQL): each distinct origin of the batch
    looked up once, each host's shard computed once (the registry is in URL order: a batch
    holds a few origins)."""
    shards: dict[str, int] = {}

    def shard(origins: pa.Array) -> pa.Array:
        encoded = pc.dictionary_encode(origins.combine_chunks() if isinstance(origins, pa.ChunkedArray) else origins)
        distinct = encoded.dictionary.to_pylist()
        for origin in distinct:
            if origin not in shards:
                shards[origin] = shard_of(host_of(origin), shard_count)
        return pc.take(pa.array([shards[o] for o in distinct], pa.int32()), encoded.indices)

    return shard


def describe_seen_filter(bloom: Bloom, elements: int, fp_rate: float = DEFAULT_FP_RATE) -> SeenFilterCounts:
    return SeenFilterCounts(elements, bloom.size_in_bits, fp_rate, measured_fp_rate(bloom, FP_SAMPLE_SIZE))
