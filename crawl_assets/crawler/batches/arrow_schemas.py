"""Arrow schemas of the crawl's tables, and conversion of the core's results into them."""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from ..fetching.fetch_record import FetchRecord
from ..fetching.workbench import FetchTask

FETCH_LOG_SCHEMA = pa.schema([
    ("url", pa.string()),
    ("host", pa.string()),
    ("depth", pa.int32()),
    ("status", pa.int32()),
    ("status_class", pa.string()),
    ("fetched_at", pa.timestamp("us", tz="UTC")),
    ("duration_ms", pa.float64()),
    ("bytes", pa.int64()),
    ("content_type", pa.string()),
    ("sha256", pa.string()),
    ("etag", pa.string()),
    ("last_modified", pa.string()),
    ("error", pa.string()),
    ("ip", pa.string()),
    ("attempts", pa.int32()),
    ("redirect_to", pa.string()),
    ("payload_digest", pa.string()),
    ("simhash", pa.uint64()),
    ("warc_type", pa.string()),
    ("refers_to", pa.string()),
    ("warc_file", pa.string()),
    ("warc_offset", pa.int64()),
    ("warc_length", pa.int64()),
    ("outlinks", pa.int32()),
    ("noindex", pa.bool_()),  # <meta name="robots"> or X-Robots-Tag said noindex (crawler/content/page_signals.py)
    ("nofollow", pa.bool_()),  # ... or nofollow: none of the page's links was followed
    ("rendered", pa.bool_()),  # rendered in a browser: simhash, change_digest, outlinks are the DOM's (crawler/rendering/)
    ("change_digest", pa.string()),  # sha256 less per-request values (crawler/content/volatile_parts.py)
    ("hsts", pa.bool_()),  # the answer's Strict-Transport-Security: true, false (max-age=0), null (none)
])

LINKS_SCHEMA = pa.schema([
    ("source", pa.string()),
    ("target", pa.string()),
    ("target_host", pa.string()),
    ("depth", pa.int32()),  # the target's depth: the source's depth + 1
    ("is_new", pa.bool_()),  # never seen by the crawl before this link
    ("dropped_reason", pa.string()),  # set when a rule refused the target (vocabulary.DropReason)
])

DROPPED_SCHEMA = pa.schema([("host", pa.string()), ("reason", pa.string()), ("urls", pa.int64())])

# The render tier's decision per host of the batch, with its evidence (rendering/render_decision.py).
RENDER_DECISIONS_SCHEMA = pa.schema([
    ("host", pa.string()),
    ("signal_pages", pa.int64()),  # pages whose plain fetch showed the script signals
    ("pages_sampled", pa.int64()),  # pages the decision rests on (a listed host's: all rendered)
    ("plain_links", pa.int64()),  # the sample's links as fetched ...
    ("rendered_links", pa.int64()),  # ... and as rendered
    ("plain_text_chars", pa.int64()),  # the sample's visible text as fetched ...
    ("rendered_text_chars", pa.int64()),  # ... and as rendered
    ("decision", pa.string()),  # render, plain, listed; null: no sample rendered (budget spent)
    ("pages_rendered", pa.int64()),
])

FRONTIER_SCHEMA = pa.schema([
    ("url", pa.string()),
    ("host", pa.string()),
    ("depth", pa.int32()),
    ("priority", pa.int32()),  # 1 (most urgent) .. number of front queues
    ("etag", pa.string()),  # validators of the URL's latest answer, for a conditional GET
    ("last_modified", pa.string()),
    ("last_captured_at", pa.timestamp("us", tz="UTC")),  # the latest 200, for revisit records
    ("last_payload_digest", pa.string()),  # and its payload digest
])


def fetch_tasks(frontier: pa.Table) -> list[FetchTask]:
    """The fetch batch's work from frontier rows (FRONTIER_SCHEMA; files written before
    last_captured_at existed lack that column)."""
    assert {"url", "host", "depth", "priority"} <= set(frontier.column_names), frontier.column_names
    return [FetchTask(row["url"], row["host"], row["depth"], row["priority"], etag=row.get("etag"),
                      last_modified=row.get("last_modified"), last_captured_at=row.get("last_captured_at"),
                      last_payload_digest=row.get("last_payload_digest"))
            for row in frontier.to_pylist()]


def fetch_log_table(records: list[FetchRecord]) -> pa.Table:
    rows = [dataclasses.asdict(r) for r in records]
    return pa.Table.from_pylist(rows, schema=FETCH_LOG_SCHEMA)


def dropped_table(dropped: dict) -> pa.Table:
    rows = [{"host": h, "reason": r, "urls": n} for h, reasons in sorted(dropped.items())
            for r, n in sorted(reasons.items())]
    return pa.Table.from_pylist(rows, schema=DROPPED_SCHEMA)


def render_decisions_table(hosts: dict) -> pa.Table:
    """hosts: host -> HostEvidence (rendering/render_decision.py)."""
    rows = [{**dataclasses.asdict(evidence), "host": host} for host, evidence in sorted(hosts.items())]
    return pa.Table.from_pylist(rows, schema=RENDER_DECISIONS_SCHEMA)


def links_table(links: list[tuple]) -> pa.Table:
    columns = list(zip(*links)) if links else [[] for _ in LINKS_SCHEMA]
    return pa.table(dict(zip(LINKS_SCHEMA.names, columns)), schema=LINKS_SCHEMA)
