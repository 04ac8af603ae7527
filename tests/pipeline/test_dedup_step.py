"""The dedup step without Dagster: fingerprints, pairs, MinHash confirmation, clusters and
each host's near-duplicate ratio."""

import pyarrow as pa
import pytest

from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.pipeline.dedup_step import build_clusters, build_simhash_index, dedup_inputs
from crawl_files import fetch_row, settings_for, write_fetch_log

DAY = "2026-11-29"
BASE = 0xF0F0_1234_5678_9ABC


def test_near_duplicates_cluster_around_the_first_fetched_page(tmp_path):
    settings = settings_for(tmp_path, near_dup_threshold=3, demote_min_pages=3, demote_near_dup_ratio=0.6)
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://copies.test/a", "2026-11-28T10:00:00", simhash=BASE),
        fetch_row("http://copies.test/b", "2026-11-28T09:00:00", simhash=BASE ^ 0b1),  # first fetched
        fetch_row("http://copies.test/c", "2026-11-28T11:00:00", simhash=BASE ^ 0b110),
        fetch_row("http://fine.test/x", "2026-11-28T10:00:00", simhash=0x0123_4567_89AB_CDEF),
        fetch_row("http://fine.test/y", "2026-11-28T10:00:00", simhash=0xFFFF_0000_FFFF_0000),
        fetch_row("http://fine.test/z", "2026-11-28T10:00:00", simhash=0x1111_2222_3333_4444),
        fetch_row("http://fine.test/robots", "2026-11-28T10:00:00", simhash=None),  # no text: no print
    ])
    # Fetched again today and changed: its latest fingerprint is a copy no more.
    write_fetch_log(tmp_path, DAY, [fetch_row("http://copies.test/c", "2026-11-29T10:00:00",
                                              simhash=0x5555_AAAA_5555_AAAA)])
    index = build_simhash_index(settings, dedup_inputs(tmp_path, DAY))
    assert index.counts.fingerprints == 6
    assert {frozenset(p) for p in zip(index.pairs["url_a"].to_pylist(), index.pairs["url_b"].to_pylist())} == {
        frozenset({"http://copies.test/a", "http://copies.test/b"})}

    yesterday = build_simhash_index(settings, dedup_inputs(tmp_path, "2026-11-28"))
    assert yesterday.counts.near_pairs == 3  # a-b (1 bit), a-c (2 bits), b-c (3 bits)
    result = build_clusters(settings, yesterday.fingerprints, yesterday.pairs)
    rows = {r["url"]: r for r in result.clusters.to_pylist()}
    assert {u: r["representative"] for u, r in rows.items() if u.startswith("http://copies")} == dict.fromkeys(
        ["http://copies.test/a", "http://copies.test/b", "http://copies.test/c"], "http://copies.test/b")
    assert rows["http://copies.test/a"]["cluster_size"] == 3 and rows["http://fine.test/x"]["cluster_size"] == 1
    quality = {r["host"]: r for r in result.host_quality.to_pylist()}
    assert quality["copies.test"]["pages"] == 3 and quality["copies.test"]["near_duplicates"] == 2
    assert quality["copies.test"]["near_duplicate_ratio"] == pytest.approx(0.6667)
    assert quality["fine.test"]["near_duplicate_ratio"] == 0.0
    counts = result.counts
    assert (counts.pages, counts.groups, counts.pages_in_groups, counts.near_pairs) == (6, 1, 3, 3)
    assert counts.hosts_over_demotion_ratio == 1 and counts.pairs_rejected_by_minhash == 0
    assert counts.near_duplicate_share == 0.3333  # two of the six pages are not their group's representative


def test_minhash_confirmation_rejects_pairs_whose_texts_differ(tmp_path):
    settings = settings_for(tmp_path)
    prints = pa.Table.from_pylist([
        {"url": "http://t.test/a", "host": "t.test", "fetched_at": 1},
        {"url": "http://t.test/b", "host": "t.test", "fetched_at": 2},
        {"url": "http://t.test/c", "host": "t.test", "fetched_at": 3}])
    pairs = pa.table({"url_a": ["http://t.test/a", "http://t.test/a"],
                      "url_b": ["http://t.test/b", "http://t.test/c"], "distance": pa.array([2, 3], pa.int8())})
    story = " ".join(f"word{i} follows word{i + 1} in the one long story" for i in range(60))
    texts = {"http://t.test/a": story, "http://t.test/b": story + " with a new footer",
             "http://t.test/c": " ".join(f"another{i} article{i} entirely" for i in range(200))}
    result = build_clusters(settings, prints, pairs, text_of=lambda row: texts[row["url"]], min_jaccard=0.8)
    assert result.counts.pairs_rejected_by_minhash == 1 and result.counts.near_pairs == 1
    representative = dict(zip(result.clusters["url"].to_pylist(), result.clusters["representative"].to_pylist()))
    assert representative == {"http://t.test/a": "http://t.test/a", "http://t.test/b": "http://t.test/a",
                              "http://t.test/c": "http://t.test/c"}


def test_without_fetch_logs_the_error_says_what_to_materialise(tmp_path):
    with pytest.raises(CrawlInputError, match="materialise fetch_log first"):
        dedup_inputs(tmp_path, DAY)
