"""The fetch step without Dagster: its inputs (demoted hosts, archived payloads, the seen
filter) and what it does with them."""

import dataclasses
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from crawl_assets.crawler.archive.warc_index import IndexedRecord, captures_table, url_key
from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.url_policy.url_bloom import build_filter, save_filter
from crawl_assets.crawler.vocabulary import DropReason, WarcRecordKind
from crawl_assets.pipeline.checks_step import frontier_accounted_for
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.fetch_step import (
    FetchInputs,
    fetch_inputs,
    first_day_share,
    load_archived_payloads,
    load_demoted_hosts,
    load_seen_filter,
    run_fetch_step,
)
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.storage.layout import (
    frontier_file, host_dup_ratio_file, seen_filter_file, warc_dir, write_parquet_atomic,
)
from demoweb import DemoWeb, DemoWebThread
from crawl_files import settings_for, shard_for, write_links, write_seeds
from support import write_test_settings

DAY = "2026-11-29"


def write_host_quality(root, date, rows):
    table = pa.table({"host": [r[0] for r in rows], "pages": [r[1] for r in rows],
                      "near_duplicates": [round(r[1] * r[2]) for r in rows],
                      "near_duplicate_ratio": [r[2] for r in rows]})
    write_parquet_atomic(table, host_dup_ratio_file(root, date))


def test_hosts_that_mostly_copied_on_an_earlier_day_are_demoted(tmp_path):
    settings = settings_for(tmp_path)
    write_host_quality(tmp_path, "2026-11-27", [("old.test", 40, 0.95)])
    write_host_quality(tmp_path, "2026-11-28", [("copies.test", 40, 0.9), ("fine.test", 40, 0.05),
                                                ("tiny.test", 3, 1.0), ("edge.test", 10, 0.8)])
    # The newest count before the day decides; too few pages: not judged; the ratio is inclusive.
    assert load_demoted_hosts(tmp_path, DAY, settings) == {"copies.test", "edge.test"}
    assert load_demoted_hosts(tmp_path, "2026-11-28", settings) == {"old.test"}  # only earlier days
    assert load_demoted_hosts(tmp_path, "2026-11-27", settings) == frozenset()
    fewer = settings_for(tmp_path, demote_min_pages=3, demote_near_dup_ratio=0.9)
    assert load_demoted_hosts(tmp_path, DAY, fewer) == {"copies.test", "tiny.test"}


def write_capture_index(root, date: str, rows: list[tuple], shard: str = "s00") -> None:
    """A WARC file's Parquet capture index (warc_index.py) of rows (url, when, warc_type, status, digest)."""
    records = [IndexedRecord(url_key(url), when.replace("-", "").replace("T", "").replace(":", "")[:14],
                             datetime.fromisoformat(when).replace(tzinfo=timezone.utc), url, "text/html", status,
                             digest, 100, 0, "x.warc.gz", kind, None, None, None)
               for url, when, kind, status, digest in rows]
    write_parquet_atomic(captures_table(records), warc_dir(root, date, shard) / "x.parquet")


def test_archived_payloads_are_the_first_full_capture_of_each_digest_before_the_day(tmp_path):
    write_capture_index(tmp_path, "2026-11-27", [
        ("http://a.test/1", "2026-11-27T10:00:00", "response", 200, "sha1:AAA"),
        ("http://a.test/copy", "2026-11-27T09:00:00", "response", 200, "sha1:AAA"),
        ("http://a.test/2", "2026-11-27T11:00:00", "revisit", None, "sha1:AAA"),  # a 304
        ("http://a.test/missing", "2026-11-27T08:00:00", "response", 404, "sha1:404"),  # not a full answer
        ("http://a.test/1", "2026-11-27T10:00:00", "conversion", None, "sha1:DOM"),  # a rendered DOM
        # the render tier's subresources are in no fetch log: their payloads are archived all the same
        ("http://a.test/static/app.js", "2026-11-27T10:00:01", "response", 200, "sha1:APP"),
    ])
    write_capture_index(tmp_path, "2026-11-28", [
        ("http://b.test/x", "2026-11-28T10:00:00", "response", 200, "sha1:BBB"),
        # A revisit record is not a capture to refer to.
        ("http://b.test/y", "2026-11-28T08:00:00", "revisit", 200, "sha1:CCC"),
    ], shard="s01")
    write_capture_index(tmp_path, DAY, [("http://c.test/", "2026-11-29T10:00:00", "response", 200, "sha1:DDD")])

    archived = load_archived_payloads(tmp_path, DAY)
    assert archived == {"sha1:AAA": ("http://a.test/copy", "2026-11-27T09:00:00.000000Z"),
                        "sha1:APP": ("http://a.test/static/app.js", "2026-11-27T10:00:01.000000Z"),
                        "sha1:BBB": ("http://b.test/x", "2026-11-28T10:00:00.000000Z")}
    assert load_archived_payloads(tmp_path, "2026-11-27") == {}


def test_the_seen_filter_is_the_newest_from_before_the_day(tmp_path):
    assert load_seen_filter(tmp_path, DAY) is None  # the first day knows nothing yet
    save_filter(build_filter(["http://a.test/old"], 10), seen_filter_file(tmp_path, "2026-11-27"))
    save_filter(build_filter(["http://a.test/new"], 10), seen_filter_file(tmp_path, "2026-11-28"))
    save_filter(build_filter(["http://a.test/today"], 10), seen_filter_file(tmp_path, DAY))
    seen = load_seen_filter(tmp_path, DAY)
    assert "http://a.test/new" in seen and "http://a.test/today" not in seen


def test_a_rerun_moves_the_earlier_warc_files_aside(tmp_path):
    settings = settings_for(tmp_path)
    folder = warc_dir(tmp_path, DAY, "s00")
    folder.mkdir(parents=True)
    (folder / "recrawl-earlier-00000.warc.gz").write_bytes(b"an earlier run")
    empty = FRONTIER_SCHEMA.empty_table()
    result = run_fetch_step(settings, "s00", FetchInputs(empty), folder, "recrawl-again")
    assert [p.name for p in result.superseded] == ["recrawl-earlier-00000.warc.gz"]
    assert (folder / "superseded" / "recrawl-earlier-00000.warc.gz").read_bytes() == b"an earlier run"
    assert all(p.parent == folder and p.name.startswith("recrawl-again") for p in result.warc_files)
    assert result.counts.fetched == 0 and result.fetch_log.num_rows == 0


@pytest.fixture(scope="module")
def demo_web():
    with DemoWebThread(DemoWeb(seed=3, hosts=1, pages_per_host=6), port=0) as web:
        yield web.web


def frontier_of(web, settings):
    host = web.hostname(0)
    rows = [{"url": url, "host": host, "depth": 0, "priority": 1} for url in web.seed_urls()]
    return pa.Table.from_pylist(rows, schema=FRONTIER_SCHEMA), shard_for(host, settings)


def test_archived_payloads_and_the_seen_filter_reach_the_batch(tmp_path, demo_web):
    settings = write_test_settings(tmp_path, demo_web).load()
    frontier, shard = frontier_of(demo_web, settings)

    first = run_fetch_step(settings, shard, FetchInputs(frontier), tmp_path / "one", "one")
    captured = [r for r in first.fetch_log.to_pylist() if r["warc_type"] == WarcRecordKind.RESPONSE]
    assert first.counts.fetched > 3 and first.counts.new_links > 0 and first.counts.revisit_records == 0

    # Day two: yesterday's payloads are archived and every URL is known.
    archived = {r["payload_digest"]: (r["url"], "2026-11-28T10:00:00Z") for r in captured}
    seen = build_filter([r["url"] for r in first.fetch_log.to_pylist()], 100)
    second = run_fetch_step(settings, shard, FetchInputs(frontier, seen, archived_payloads=archived),
                            tmp_path / "two", "two")
    log = {r["url"]: r for r in second.fetch_log.to_pylist()}
    for row in captured:
        assert log[row["url"]]["warc_type"] == WarcRecordKind.REVISIT
        assert log[row["url"]]["refers_to"] == row["url"]
    assert second.counts.revisit_records == len(captured)
    assert second.counts.new_links == 0  # every link target was in the seen filter


def test_the_first_days_budget_is_shared_out_by_frontier_and_holds_the_links_found(tmp_path, demo_web):
    settings = write_test_settings(tmp_path, demo_web, extra="daily_fetch_budget = 100\n").load()
    frontier, shard = frontier_of(demo_web, settings)
    root = settings.data_root
    other = next(s for s in settings.shard_keys() if s != shard)
    write_parquet_atomic(frontier, frontier_file(root, DAY, shard))
    write_parquet_atomic(pa.concat_tables([frontier] * 3), frontier_file(root, DAY, other))
    shares = {s: first_day_share(root, DAY, s, settings) for s in settings.shard_keys()}
    assert shares[shard] == 25 and shares[other] == 75 and sum(shares.values()) == 100
    assert fetch_inputs(root, DAY, shard, settings).max_pages == 25  # no plan: the crawl's first day

    result = run_fetch_step(settings, shard, FetchInputs(frontier, max_pages=3), tmp_path / "warc", "budget")
    assert frontier.num_rows == 1 and result.fetch_log.num_rows == 3  # the seed, then two pages it linked
    assert sum(result.counts.dropped_by_reason[DropReason.DAY_BUDGET].values()) > 0


def test_demoted_hosts_are_counted_and_their_links_not_followed(tmp_path, demo_web):
    settings = write_test_settings(tmp_path, demo_web).load()
    frontier, shard = frontier_of(demo_web, settings)
    host = demo_web.hostname(0)
    result = run_fetch_step(settings, shard, FetchInputs(frontier, demoted_hosts=frozenset({host})),
                            tmp_path / "warc", "demoted")
    assert result.counts.demoted_hosts == 1
    assert result.counts.discovered_in_batch == 0  # nothing beyond the frontier was fetched
    assert result.counts.dropped_by_reason["demoted_host"][host] > 0
    assert {(r["host"], r["reason"]) for r in result.dropped.to_pylist()} >= {(host, "demoted_host")}


def test_a_plan_holding_a_url_deeper_than_max_depth_does_not_fail_the_shard(tmp_path, demo_web):
    # Day two of a crawl: yesterday's plan holds a URL one link deeper than max_depth. The
    # frontier leaves it out as too deep, so every URL it hands the batch gets a fetch-log row
    # and the shard's blocking check passes (before, the batch dropped it without a row).
    settings = dataclasses.replace(write_test_settings(tmp_path, demo_web).load(), max_depth=1)
    root, home = settings.data_root, demo_web.seed_urls()[0]
    write_seeds(root, [home])
    write_links(root, "2026-11-28", [(home, home + "d1.html", 1), (home + "d1.html", home + "d2.html", 2)])
    plan = pa.table({"url": [home, home + "d1.html", home + "d2.html"], "planned": [True] * 3,
                     "plan_rank": pa.array([3, 2, 1], pa.int64()), "level": pa.array([1] * 3, pa.int32())})
    frontier = build_frontier(settings, history_before(root, DAY), plan)
    assert frontier.counts.left_out_by_reason == {DropReason.DEPTH: 1}
    shard = shard_for(demo_web.hostname(0), settings)
    table = dict(frontier.shard_tables())[shard]
    seen = build_filter(plan["url"].to_pylist(), 100)  # day two: the home page's links are known
    result = run_fetch_step(settings, shard, FetchInputs(table, seen, follow_links=False), tmp_path / "warc", "deep")
    assert frontier_accounted_for(table, result.fetch_log).passed
    assert sorted(result.fetch_log.column("url").to_pylist()) == [home, home + "d1.html"]
