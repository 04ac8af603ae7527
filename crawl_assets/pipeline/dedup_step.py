"""The dedup step: SimHash fingerprints of every page fetched up to day D, near-duplicate
pairs from the permuted-block index (no all-pairs comparison), optionally confirmed by
MinHash on the page texts read back from the WARC files, then clusters with a
representative each, and each host's near-duplicate and copy ratios (tomorrow's demotion
input).

Near-duplicates (the clusters) are pages whose main text is alike. Copies are what demotes a
host: near-duplicates whose own links are alike too. A mirror repeats another page's text and
its links; a host's tag or archive pages repeat a template (its text can outweigh the list in
the main text) and differ in what they list. A page's own links are its links less its host's
template links, those on at least TEMPLATE_LINK_SHARE of the host's pages being judged (and
on two of them at the least); a link to the page's own host is compared by its path, so a
mirror on another host links alike. A pair of near-duplicates is a copy when its own links'
Jaccard similarity is at least COPY_MIN_LINK_JACCARD (two pages with no own links are alike).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..crawler.content.minhash_check import jaccard, text_from_warc
from ..crawler.content.simhash import clusters, near_duplicate_pairs
from ..crawler.crawl_errors import CrawlInputError
from ..crawler.settings import CrawlSettings
from ..storage.layout import fingerprints_file, near_pairs_file, shard_files, warc_dir
from ..storage.shared_root import query_connection, read_table
from .fetch_step import demoted_hosts
from .input_files import readable_parquet


def links_inputs(root: Path, date: str) -> list[str]:
    """The links files of every day up to and including `date` (each page's own links come
    from its latest fetch's day)."""
    return [str(p) for p in readable_parquet(shard_files(root, "links", through=date))]


def dedup_inputs(root: Path, date: str) -> tuple[Path, ...]:
    """The fetch logs of every day up to and including `date`."""
    logs = readable_parquet(shard_files(root, "fetch_log", through=date))
    if not logs:
        raise CrawlInputError(f"no fetch logs under {root / 'fetch_log'} up to {date}: "
                                "materialise fetch_log first")
    return logs


# Each URL's latest fingerprint: what the page says now, and where its record is.
FINGERPRINTS_SQL = """
SELECT url, host, simhash, fetched_at, CAST(date AS VARCHAR) AS date, shard, warc_file, warc_offset,
       refers_to
FROM read_parquet($fetch_logs, hive_partitioning = true, union_by_name = true)
WHERE simhash IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY url ORDER BY fetched_at DESC) = 1
ORDER BY url
"""


@dataclass(frozen=True)
class SimhashIndexCounts:
    fingerprints: int
    near_pairs: int


@dataclass(frozen=True)
class SimhashIndex:
    fingerprints: pa.Table  # one row per URL (FINGERPRINTS_SQL), ordered by url
    pairs: pa.Table  # url_a, url_b, distance
    counts: SimhashIndexCounts


def build_simhash_index(settings: CrawlSettings, fetch_logs: tuple[Path, ...]) -> SimhashIndex:
    prints = query_connection().sql(FINGERPRINTS_SQL, params={"fetch_logs": [str(p) for p in fetch_logs]})
    prints = prints.to_arrow_table()
    fps = prints.column("simhash").to_numpy(zero_copy_only=False).astype(np.uint64)
    found = near_duplicate_pairs(np.arange(len(fps), dtype=np.int64), fps, settings.near_dup_threshold)
    urls = prints.column("url")
    pairs = pa.table({"url_a": urls.take(pa.array(found.a)), "url_b": urls.take(pa.array(found.b)),
                      "distance": pa.array(found.distance, pa.int8())})
    return SimhashIndex(prints, pairs, SimhashIndexCounts(prints.num_rows, pairs.num_rows))


def load_simhash_index(root: Path, date: str) -> tuple[pa.Table, pa.Table]:
    """(fingerprints, pairs) of the day's simhash_index."""
    path = fingerprints_file(root, date)
    if not path.exists():
        raise CrawlInputError(f"{path} is missing: materialise simhash_index for {date} first")
    return read_table(path), read_table(near_pairs_file(root, date))


# Each host's pages, how many of them are near-duplicates of another page (not their
# cluster's representative) and how many are copies (not their copy group's representative),
# and the shares: the copy ratio is the input of tomorrow's demotion rule.
HOST_QUALITY_SQL = """
SELECT host, count(*) AS pages,
       count(*) FILTER (WHERE url <> representative) AS near_duplicates,
       round(near_duplicates / pages, 4) AS near_duplicate_ratio,
       count(*) FILTER (WHERE url <> copy_of) AS copies,
       round(copies / pages, 4) AS copy_ratio
FROM clusters GROUP BY host ORDER BY host
"""

# Copies: near-duplicate pages whose own links are alike too (the module docstring).
TEMPLATE_LINK_SHARE = 0.5
COPY_MIN_LINK_JACCARD = 0.5

# Each near-duplicate pair's own-link similarity, over the links of each page's latest fetch
# (the links table of its fingerprint's day and shard). judged: the pages of the pairs; a
# link to the page's own host by its path.
PAIR_LINKS_SQL = """
WITH judged AS (
    SELECT f.url, f.host, f.date, f.shard
    FROM fingerprints f SEMI JOIN (SELECT url_a AS url FROM pairs UNION SELECT url_b FROM pairs) p USING (url)
),
page_links AS (
    SELECT DISTINCT j.url, j.host,
           CASE WHEN l.target_host = j.host THEN regexp_replace(l.target, '^[^:]+://[^/]*', '') ELSE l.target END AS link
    FROM read_parquet($links, hive_partitioning = true, union_by_name = true) l
    JOIN judged j ON l.source = j.url AND CAST(l.date AS VARCHAR) = j.date AND l.shard = j.shard
),
host_pages AS (SELECT host, count(*) AS pages FROM judged GROUP BY host),
template AS (
    SELECT host, link FROM page_links JOIN host_pages USING (host)
    GROUP BY host, link, pages HAVING count(*) >= 2 AND count(*) >= $share * pages
),
own AS (SELECT url, link FROM page_links ANTI JOIN template USING (host, link)),
sizes AS (SELECT j.url, count(o.link) AS links FROM judged j LEFT JOIN own o USING (url) GROUP BY j.url),
shared AS (
    SELECT p.url_a, p.url_b, count(*) AS common
    FROM pairs p JOIN own a ON a.url = p.url_a JOIN own b ON b.url = p.url_b AND b.link = a.link
    GROUP BY p.url_a, p.url_b
)
SELECT p.url_a, p.url_b,
       CASE WHEN sa.links + sb.links = 0 THEN 1.0
            ELSE coalesce(s.common, 0) / (sa.links + sb.links - coalesce(s.common, 0)) END AS link_jaccard
FROM pairs p JOIN sizes sa ON sa.url = p.url_a JOIN sizes sb ON sb.url = p.url_b
LEFT JOIN shared s USING (url_a, url_b)
"""


@dataclass(frozen=True)
class ClusterCounts:
    pages: int
    groups: int  # clusters of two or more pages
    pages_in_groups: int
    near_pairs: int  # after the MinHash confirmation, if any
    pairs_rejected_by_minhash: int
    hosts_over_demotion_ratio: int
    copy_pairs: int = 0  # near pairs whose own links are alike too (copies: what demotes a host)

    @property
    def near_duplicate_share(self) -> float:
        """Pages that are not their group's representative, of every page."""
        return round((self.pages_in_groups - self.groups) / self.pages, 4) if self.pages else 0.0


@dataclass(frozen=True)
class ClusterResult:
    clusters: pa.Table  # url, host, representative, cluster_size, copy_of
    host_quality: pa.Table  # host, pages, near_duplicates, near_duplicate_ratio, copies, copy_ratio
    counts: ClusterCounts


TextOf = Callable[[dict], str]  # a fingerprint row -> the page's main text


def warc_text_reader(root: Path, fingerprints: list[dict]) -> TextOf:
    """A page's main text from its WARC record; a revisit record's from the capture it refers to."""
    by_url = {row["url"]: row for row in fingerprints}

    def text_of(row: dict) -> str:
        row = by_url.get(row["refers_to"], row)
        return text_from_warc(warc_dir(root, row["date"], row["shard"]) / row["warc_file"], row["warc_offset"])

    return text_of


def copy_pairs(fingerprints: pa.Table, pairs: list[dict], links: list[str]) -> list[dict]:
    """The near-duplicate pairs that are copies: their own links alike too (PAIR_LINKS_SQL
    over the links files `links`)."""
    if not pairs:
        return []
    con = query_connection()
    con.register("fingerprints", fingerprints.select(["url", "host", "date", "shard"]))
    con.register("pairs", pa.Table.from_pylist([{"url_a": p["url_a"], "url_b": p["url_b"]} for p in pairs]))
    rows = con.execute(PAIR_LINKS_SQL, {"links": links, "share": TEMPLATE_LINK_SHARE}).fetchall()
    alike = {(a, b) for a, b, similarity in rows if similarity >= COPY_MIN_LINK_JACCARD}
    return [p for p in pairs if (p["url_a"], p["url_b"]) in alike]


def build_clusters(settings: CrawlSettings, fingerprints: pa.Table, pairs: pa.Table,
                   text_of: TextOf | None = None, min_jaccard: float = 0.8,
                   links: list[str] | None = None) -> ClusterResult:
    """Clusters of near-duplicate pages, the first fetched page of each its representative,
    and groups of copies (copy_of: each page's copy group's representative).

    With `text_of`, every candidate pair is confirmed first: kept only if the MinHash
    Jaccard similarity of the two texts is at least min_jaccard. links: the links files of
    the days fingerprinted (links_inputs); without them every near-duplicate counts as a copy."""
    prints = fingerprints.to_pylist()
    index = {row["url"]: i for i, row in enumerate(prints)}
    candidates = pairs.to_pylist()
    kept = candidates if text_of is None else [
        pair for pair in candidates
        if jaccard(text_of(prints[index[pair["url_a"]]]), text_of(prints[index[pair["url_b"]]])) >= min_jaccard]
    prefer = lambda i: (prints[i]["fetched_at"], prints[i]["url"])  # noqa: E731
    representative = clusters([(index[p["url_a"]], index[p["url_b"]]) for p in kept], range(len(prints)),
                              prefer=prefer)
    copies = kept if links is None else copy_pairs(fingerprints, kept, links)
    copy_of = clusters([(index[p["url_a"]], index[p["url_b"]]) for p in copies], range(len(prints)), prefer=prefer)
    members = np.bincount(list(representative.values()), minlength=len(prints))
    table = pa.table({
        "url": fingerprints.column("url"),
        "host": fingerprints.column("host"),
        "representative": pa.array([prints[representative[i]]["url"] for i in range(len(prints))], pa.string()),
        "cluster_size": pa.array([int(members[representative[i]]) for i in range(len(prints))], pa.int64()),
        "copy_of": pa.array([prints[copy_of[i]]["url"] for i in range(len(prints))], pa.string()),
    })
    con = query_connection()
    con.register("clusters", table)
    host_quality = con.sql(HOST_QUALITY_SQL).to_arrow_table()
    counts = ClusterCounts(
        pages=len(prints),
        groups=sum(1 for i in range(len(prints)) if representative[i] == i and members[i] > 1),
        pages_in_groups=int(sum(members[members > 1])),
        near_pairs=len(kept),
        pairs_rejected_by_minhash=len(candidates) - len(kept),
        hosts_over_demotion_ratio=len(demoted_hosts(host_quality, settings)),
        copy_pairs=len(copies),
    )
    return ClusterResult(table, host_quality, counts)
