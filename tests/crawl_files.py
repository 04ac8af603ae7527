"""Small crawl outputs written where the layout puts them, for the pipeline step tests."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA, LINKS_SCHEMA
from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.storage.layout import fetch_log_file, links_file, seeds_file, write_parquet_atomic


def settings_for(root: Path, **overrides) -> CrawlSettings:
    return dataclasses.replace(CrawlSettings(), data_root=root, seeds_dir=root / "seeds",
                               blocklist_file=root / "blocklist.txt", **overrides)


def host_of(url: str) -> str:
    return url.split("/")[2].split(":")[0]  # (the demo web's URLs carry a port)


def write_seeds(root: Path, urls: list[str]) -> None:
    write_parquet_atomic(pa.table({"url": urls, "host": [host_of(u) for u in urls],
                                   "source": [f"seeds.txt:{i + 1}" for i in range(len(urls))]}),
                         seeds_file(root))


def write_links(root: Path, date: str, links: list[tuple], shard: str = "s00") -> None:
    """links: (source, target, depth[, dropped_reason[, is_new]]) (is_new: True unless given)."""
    rows = [{"source": link[0], "target": link[1], "target_host": host_of(link[1]), "depth": link[2],
             "is_new": link[4] if len(link) > 4 else True, "dropped_reason": link[3] if len(link) > 3 else None}
            for link in links]
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=LINKS_SCHEMA), links_file(root, date, shard))


def fetch_row(url: str, when: datetime | str, **fields) -> dict:
    """One fetch log row; an answered 200 unless `fields` say otherwise."""
    if isinstance(when, str):
        when = datetime.fromisoformat(when).replace(tzinfo=timezone.utc)
    row = dict.fromkeys(FETCH_LOG_SCHEMA.names)
    row.update(url=url, host=host_of(url), depth=0, status=200, status_class="ok", fetched_at=when,
               warc_type="response", bytes=100)
    row.update(fields)
    return row


def write_fetch_log(root: Path, date: str, rows: list[dict], shard: str = "s00") -> None:
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=FETCH_LOG_SCHEMA), fetch_log_file(root, date, shard))


def shard_for(host: str, settings: CrawlSettings) -> str:
    return shard_key(shard_of(host, settings.shard_count))
