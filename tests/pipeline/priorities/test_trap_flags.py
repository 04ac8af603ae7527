"""Which hosts recrawl_priorities gives the small budget as traps: the two thresholds are
settings (trap_min_refused, trap_refused_ratio), and changing one changes the verdict."""

import dataclasses

import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import DROPPED_SCHEMA
from crawl_assets.crawler.settings import CrawlSettings, SettingsError, load_settings
from crawl_assets.pipeline.recrawl_inputs import HostFlag, host_facts, trap_hosts
from crawl_assets.storage.layout import dropped_file, write_parquet_atomic
from crawl_files import fetch_row, settings_for, write_fetch_log

DAY = "2026-11-20"


def write_day(root):
    """calendar.test: 30 pages fetched, 6 URLs refused (0.2 a page); stray.test: 200 pages, 6
    refused (0.03 a page); few.test: 4 refused, no page."""
    rows = [fetch_row(f"http://calendar.test/{i}", f"{DAY}T10:00:00") for i in range(30)]
    rows += [fetch_row(f"http://stray.test/{i}", f"{DAY}T10:00:00") for i in range(200)]
    write_fetch_log(root, DAY, rows)
    dropped = [{"host": "calendar.test", "reason": "pattern_budget", "urls": 6},
               {"host": "stray.test", "reason": "url_too_long", "urls": 6},
               {"host": "few.test", "reason": "repeated_path_segments", "urls": 4},
               {"host": "stray.test", "reason": "robots_disallowed", "urls": 500}]  # not a trap's sign
    write_parquet_atomic(pa.Table.from_pylist(dropped, schema=DROPPED_SCHEMA), dropped_file(root, DAY, "s00"))


def test_the_trap_thresholds_are_settings_and_decide_the_flag(tmp_path):
    write_day(tmp_path)
    settings = settings_for(tmp_path)
    assert (settings.trap_min_refused, settings.trap_refused_ratio) == (5, 0.1)
    assert trap_hosts(tmp_path, DAY, settings) == {"calendar.test"}
    # A stricter share per page spares nothing new; a looser one flags the stray links too.
    assert trap_hosts(tmp_path, DAY, dataclasses.replace(settings, trap_refused_ratio=0.25)) == frozenset()
    assert trap_hosts(tmp_path, DAY, dataclasses.replace(settings, trap_refused_ratio=0.02)) == {
        "calendar.test", "stray.test"}
    # Fewer refusals needed: the host with four refused URLs and no page fetched is a trap too.
    fewer = dataclasses.replace(settings, trap_min_refused=4)
    assert trap_hosts(tmp_path, DAY, fewer) == {"calendar.test", "few.test"}
    facts = host_facts(tmp_path, DAY, fewer, ["calendar.test", "few.test", "stray.test"]).to_pylist()
    assert [(r["host"], r["flag"]) for r in facts] == [
        ("calendar.test", HostFlag.TRAP), ("few.test", HostFlag.TRAP), ("stray.test", None)]


def test_the_trap_thresholds_load_from_a_settings_file(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text("[crawl]\ntrap_min_refused = 12\ntrap_refused_ratio = 0.5\n")
    loaded = load_settings(good, use_env=False)
    assert (loaded.trap_min_refused, loaded.trap_refused_ratio) == (12, 0.5)
    assert CrawlSettings().trap_min_refused == 5  # the default, written once in settings.py
    bad = tmp_path / "bad.toml"
    bad.write_text("[crawl]\ntrap_refused_ratio = -1\n")
    try:
        load_settings(bad, use_env=False)
    except SettingsError as exc:
        assert "trap_refused_ratio" in str(exc)
    else:
        raise AssertionError("a negative ratio was accepted")


def test_a_near_duplicate_heavy_host_is_flagged_by_the_demotion_settings(tmp_path):
    from crawl_assets.storage.layout import host_dup_ratio_file

    write_day(tmp_path)
    quality = pa.table({"host": ["copies.test", "calendar.test", "small.test"], "pages": [40, 30, 4],
                        "near_duplicates": [36, 30, 4], "near_duplicate_ratio": [0.9, 1.0, 1.0]})
    write_parquet_atomic(quality, host_dup_ratio_file(tmp_path, DAY))
    hosts = ["calendar.test", "copies.test", "small.test", "stray.test"]
    flags = lambda s: [r["flag"] for r in host_facts(tmp_path, DAY, s, hosts).to_pylist()]  # noqa: E731
    settings = settings_for(tmp_path)
    # A trap is a trap first; too few pages (demote_min_pages) are not judged.
    assert flags(settings) == [HostFlag.TRAP, HostFlag.NEAR_DUPLICATES, None, None]
    assert flags(dataclasses.replace(settings, demote_near_dup_ratio=0.95)) == [HostFlag.TRAP, None, None, None]
    assert flags(dataclasses.replace(settings, demote_min_pages=3)) == [
        HostFlag.TRAP, HostFlag.NEAR_DUPLICATES, HostFlag.NEAR_DUPLICATES, None]


def test_each_hosts_delay_is_what_its_fetches_kept_and_caps_its_day(tmp_path):
    from datetime import datetime, timedelta, timezone

    from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities

    start = datetime(2026, 11, 20, 10, tzinfo=timezone.utc)

    def spaced(host, n, every_s):
        return [fetch_row(f"http://{host}/{i}", start + timedelta(seconds=i * every_s), duration_ms=100.0)
                for i in range(n)]

    # slow.test kept 12 s between answers (a Crawl-delay), fast.test 0.2 s (under the 1 s
    # default: the default stands), once.test too few requests to tell.
    write_fetch_log(tmp_path, DAY, spaced("slow.test", 6, 12.1) + spaced("fast.test", 6, 0.3) + spaced("once.test", 2, 50))
    settings = settings_for(tmp_path, max_pages_per_host=100_000)
    hosts = ["fast.test", "once.test", "slow.test"]
    facts = host_facts(tmp_path, DAY, settings, hosts)
    delays = dict(zip(hosts, facts["delay_s"].to_pylist()))
    assert delays["fast.test"] == delays["once.test"] == settings.default_delay_s
    assert abs(delays["slow.test"] - 12.0) < 1e-6
    known = pa.table({"url": [f"http://{h}/{i}" for h in hosts for i in range(3)],
                      "host": [h for h in hosts for _ in range(3)]})
    stats = pa.table({"url": pa.array([], pa.string()), "host": pa.array([], pa.string()),
                      "change_rate": pa.array([], pa.float64()),
                      "last_visit_at": pa.array([], pa.timestamp("us", tz="UTC")),
                      "last_fetched_at": pa.array([], pa.timestamp("us", tz="UTC")),
                      "last_status": pa.array([], pa.int32()), "last_status_class": pa.array([], pa.string()),
                      "gone_streak": pa.array([], pa.int64()), "pending_change": pa.array([], pa.bool_())})
    caps = {r["host"]: r["cap"] for r in recrawl_priorities(stats, None, facts, known, "2026-11-21", settings)
            .hosts.to_pylist()}
    assert caps == {"fast.test": 86_400, "once.test": 86_400, "slow.test": 7_200}  # 86,400 / 12
