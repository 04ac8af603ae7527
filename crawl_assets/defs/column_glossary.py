"""What each column of the tables the assets show in the UI holds (their column schemas and the
small tables in their metadata), by column name: one sentence each, shown beside the column.
A name means the same in every table it is in; where a count's meaning depends on the table
(how many URLs, of what), the table says so in its own description (metadata_tables.py).
tests/analyst/test_asset_columns.py checks that every column an asset shows is described here."""

from __future__ import annotations

COLUMNS: dict[str, str] = {
    # the fetch log (crawler/batches/arrow_schemas.py) and the tables built from it
    "url": "The URL, normalised (lower-case host, default port dropped, fragment removed).",
    "host": "The URL's host.",
    "depth": "Links followed from a seed to reach the URL (a seed is 0; a link's: its target's).",
    "status": "HTTP status of the final answer; empty when none came (a refusal, a timeout, a DNS error).",
    "status_class": "The outcome: ok, not_modified, redirect, http_4xx, robots_disallowed, timeout, ... "
                    "(crawler/vocabulary.py).",
    "fetched_at": "When the request started (UTC); also the WARC-Date of its records.",
    "duration_ms": "Milliseconds from the request to the end of its answer.",
    "bytes": "Bytes of the body as received (before any Content-Encoding was undone).",
    "content_type": "The answer's Content-Type header.",
    "sha256": "SHA-256 of the decoded page.",
    "etag": "The ETag the server sent: tomorrow's conditional request sends it back.",
    "last_modified": "The Last-Modified the server sent: tomorrow's conditional request sends it back.",
    "error": "Why the fetch failed or what went wrong with its content; empty when nothing did.",
    "ip": "The address the crawler connected to.",
    "attempts": "Tries of the request (retries on 5xx and network errors).",
    "redirect_to": "Where a redirect pointed.",
    "payload_digest": "WARC payload digest (sha1:...) of the body; a 304's row holds the digest it confirms.",
    "simhash": "64-bit SimHash of the page's text (a rendered page's: its DOM's), for near-duplicates.",
    "warc_type": "response (archived in full) or revisit (a 304, or a payload archived before).",
    "refers_to": "A revisit's earlier capture (its URI).",
    "warc_file": "The WARC file holding the record (in warc/date=D/shard=S/).",
    "warc_offset": "The byte offset of the record's gzip member in its WARC file.",
    "warc_length": "The length of the record's gzip member in bytes.",
    "outlinks": "Links found on the page, followed or not (a rendered page's: its DOM's).",
    "noindex": "The page's robots <meta> or X-Robots-Tag said noindex (archived all the same).",
    "nofollow": "The page's robots <meta> or X-Robots-Tag said nofollow: its links were not followed.",
    "rendered": "Rendered in the browser: its SimHash, change digest and links are the DOM's.",
    "change_digest": "SHA-256 of the page less what changes on every fetch by design: what change_stats compares.",
    "hsts": "The Strict-Transport-Security max-age the host sent over HTTPS, in seconds.",
    # links
    "source": "The page the link is on (of a sitemap or feed entry: the sitemap or feed).",
    "target": "The link's target, normalised.",
    "target_host": "The target's host.",
    "is_new": "The crawl had never seen the target before this link (null: another shard's host, not known to the "
              "batch's own shard's seen filter).",
    "dropped_reason": "Why a rule refused the target (a trap defence, or the page asked not to follow it).",
    # dropped_urls, change_evidence
    "reason": "Why: a trap defence or batch limit (vocabulary.DropReason).",
    "lastmod": "When the sitemap or feed says the page last changed.",
    "source_kind": "sitemap, rss or atom.",
    "observed_at": "When the crawl fetched the sitemap or feed.",
    # url_registry
    "first_seen": "The first day the URL was found (a seed's: the registry's day).",
    "discovered_from": "The page (or seed file) the URL was first found on.",
    "last_fetched": "The last request for it that got an answer.",
    # recrawl_priorities
    "kind": "refresh (fetched before), discovery (never fetched) or gone (last answers 404 or 410).",
    "change_rate": "Estimated changes a day (change_stats; a new URL's: its host's typical rate).",
    "importance": "Host importance x (1 + in-links): what a fresh copy of the URL is worth.",
    "frequency": "Fetches a day the freshness-optimal allocation gives the URL.",
    "next_due": "The day it is next due (last visit + 1/frequency; a sitemap date after the visit: now).",
    "expected_gain": "Importance-weighted days of fresh copy a fetch on the plan day buys.",
    "due": "Due on the plan day (planned or not).",
    "planned": "In the next day's plan (a host's row: its URLs planned).",
    "plan_rank": "Its place in the plan, 1 first (0: not planned).",
    "level": "Front-queue priority level of a planned URL, 1 most urgent.",
    "cap": "The host's fetches a day: the least of max_pages_per_host, 86,400 / its delay and a flagged host's budget.",
    "flag": "Why a host gets the small budget (trap, near-duplicates); empty when it does not.",
    # day_report's own table (one row: the day)
    "date": "The crawl day (the partition).",
    "partial": "Some shard's fetch had not landed when the day closed: the day was closed on what landed.",
    "shards_landed": "Shards whose fetch batch landed whole.",
    "missing_shards": "The shards that had not landed, each with why ('none' when every shard landed).",
    "pages_fetched": "Requests that got an HTTP answer (any status).",
    "new_urls": "200 answers for URLs no earlier answer had.",
    "changed": "200 answers whose payload differs from the URL's previous answer.",
    "not_modified": "304 answers (the copy held is current).",
    "identical": "200 answers with the payload of the URL's previous answer.",
    "not_modified_share": "304 answers over requests answered.",
    "bytes_saved": "Bytes the 304s saved: each URL's last full answer, not downloaded again.",
    "trap_refusals": "URLs the trap defences refused (dropped_urls).",
    "tls_failures": "URLs lost to TLS failures (certificate, name, handshake).",
    # the hosts tables of fetch_log and day_report
    "requests": "Requests to the host in the batch (or day).",
    "http_429": "Answers 429 Too Many Requests from the host.",
    "median_spacing_s": "Median seconds between the starts of two requests in a row to the host.",
    "max_spacing_s": "Longest such gap in seconds.",
    # change_stats' change_rate_distribution
    "band": "A band of estimated change rates.",
    "changes_a_day_below": "The band's upper bound in changes a day (empty: no bound).",
    "share": "The rows' share of the whole (0 to 1).",
    # day_report's host_events
    "pages_moved": "Revisited pages of the host that changed together that day.",
    "revisits": "Pages of the host revisited that day.",
    "events": "Days so far on which the host's pages changed together.",
    "events_a_day": "Such events a day since the host was first watched.",
    # the counts tables (their count column's description is the table's own)
    "http_status": "HTTP status of the answer.",
}


def describe(name: str) -> str:
    """The column's description; "" for a name not in COLUMNS (the test names it)."""
    return COLUMNS.get(name, "")
