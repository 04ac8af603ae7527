"""change_stats on fetch logs written here: simulated histories with known change rates,
boilerplate-only changes, 304s, errors, Last-Modified honesty and sitemap evidence."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA
from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.pipeline.change_stats import url_change_state
from crawl_assets.pipeline.change_stats.change_stats_step import RateEstimator, change_stats
from crawl_assets.pipeline.change_stats.pool_sums import DEFAULT_PRIOR_RATE
from crawl_assets.pipeline.change_stats.url_change_state import read_change_stats, url_state
from crawl_assets.storage.layout import pool_sums_file, url_state_base_file, url_state_delta_file

START = datetime(2026, 3, 1, tzinfo=timezone.utc)
SETTINGS = CrawlSettings()
# The stated accuracy: with 10 or more visits, at least 80 % of URLs within 35 % of the true rate.
RELATIVE_ERROR = 0.35
SHARE_WITHIN = 0.8


def fetch(url, day, status=200, digest=None, simhash=None, last_modified=None, etag=None, nbytes=1000,
          change_digest=None):
    host = url.split("/")[2]
    status_class = {200: "ok", 304: "not_modified", 404: "http_4xx", 410: "http_4xx",
                    500: "http_5xx"}[status]
    return {"url": url, "host": host, "status": status, "status_class": status_class,
            "fetched_at": START + timedelta(days=day), "bytes": nbytes if status == 200 else 0,
            "sha256": digest if status == 200 else None, "payload_digest": digest if status == 200 else None,
            "simhash": simhash if status == 200 else None, "etag": etag,
            "change_digest": change_digest if status == 200 else None,
            "last_modified": format_datetime(START + timedelta(days=last_modified), usegmt=True)
            if last_modified is not None else None}


def write_log(tmp_path, rows) -> str:
    """Rows into the crawl's hive layout, one file per day."""
    by_day: dict[str, list] = {}
    for row in rows:
        by_day.setdefault(row["fetched_at"].date().isoformat(), []).append(row)
    for day, day_rows in by_day.items():
        out = tmp_path / "fetch_log" / f"date={day}" / "shard=s00"
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(day_rows, schema=FETCH_LOG_SCHEMA), out / "fetch_log.parquet")
    return str(tmp_path / "fetch_log" / "*" / "*" / "*.parquet")


def simulate(urls_rates, visit_days, rng, lm_host=None):
    """Fetch rows for pages changing as Poisson processes, visited at `visit_days`."""
    rows = []
    for url, rate in urls_rates:
        # Looking back from the first visit, the last change is Exp(λ) ago (memoryless).
        version, last_change, previous = 0, -rng.exponential(1 / rate) if rate else -365.0, None
        for day in visit_days(rng):
            if previous is not None:
                changes = rng.poisson(rate * (day - previous))
                if changes:
                    version += 1
                    # The last of the changes in the interval: uniform order statistics.
                    last_change = previous + (day - previous) * rng.random(changes).max()
            previous = day
            simhash = (hash(url) & 0xFFFF_FFFF) * 0x1_0000_0001 ^ (version * 0x0F0F_0F0F_0F0F)
            lm = last_change if url.split("/")[2] == lm_host else None
            rows.append(fetch(url, day, digest=f"{url}#{version}", simhash=simhash & (2**64 - 1),
                              last_modified=lm))
    return rows


def within(stats: pa.Table, truth: dict[str, float]) -> float:
    rows = stats.to_pylist()
    good = [abs(r["change_rate"] - truth[r["url"]]) <= RELATIVE_ERROR * truth[r["url"]] for r in rows]
    return sum(good) / len(good)


def test_regular_visits_estimate_known_rates(tmp_path):
    rng = np.random.default_rng(1)
    truth = {f"https://h{i % 4}.test/p/{i}": rate
             for i, rate in enumerate(np.repeat([0.1, 0.25, 0.5, 1.0], 50))}
    rows = simulate(truth.items(), lambda r: list(range(120)), rng)
    stats = change_stats(write_log(tmp_path, rows), (START + timedelta(days=130)).date(), SETTINGS)
    assert set(stats.urls["estimator"].to_pylist()) == {RateEstimator.BIAS_REDUCED}
    assert min(stats.urls["visits"].to_pylist()) == 120
    assert within(stats.urls, truth) >= SHARE_WITHIN


def test_irregular_visits_use_the_maximum_likelihood_estimate(tmp_path):
    rng = np.random.default_rng(2)
    truth = {f"https://h{i % 4}.test/p/{i}": rate
             for i, rate in enumerate(np.repeat([0.1, 0.25, 0.5], 60))}

    def irregular(r):
        return list(np.cumsum(r.uniform(0.5, 3.5, size=60)))

    rows = simulate(truth.items(), irregular, rng)
    stats = change_stats(write_log(tmp_path, rows), (START + timedelta(days=200)).date(), SETTINGS)
    estimators = stats.urls["estimator"].to_pylist()
    assert estimators.count(RateEstimator.MLE) >= 0.95 * len(estimators)
    assert within(stats.urls, truth) >= SHARE_WITHIN
    # The naive X / T underestimates fast pages (several changes hide in one interval).
    naive = {r["url"]: r["changes"] / r["observed_days"] for r in stats.urls.to_pylist()}
    fast = [u for u, rate in truth.items() if rate == 0.5]
    assert np.median([naive[u] for u in fast]) < 0.8 * 0.5
    assert np.median([r["change_rate"] for r in stats.urls.to_pylist() if r["url"] in fast]) > 0.85 * 0.5


def test_url_visited_once_gets_its_hosts_pooled_prior(tmp_path):
    rng = np.random.default_rng(3)
    # The fast host's pages differ (0.2 and 0.8 a day, 0.5 on average): its prior is weak.
    fast = {f"https://fast.test/p/{i}": 0.2 if i % 2 else 0.8 for i in range(30)}
    slow = {f"https://slow.test/p/{i}": 0.02 for i in range(30)}
    rows = simulate({**fast, **slow}.items(), lambda r: list(range(40)), rng)
    rows += [fetch("https://fast.test/p/new", 39, digest="n1", simhash=1),
             fetch("https://slow.test/p/new", 39, digest="n2", simhash=2)]
    stats = {r["url"]: r for r in change_stats(write_log(tmp_path, rows), (START + timedelta(days=40)).date(),
                                               SETTINGS).urls.to_pylist()}
    new_fast, new_slow = stats["https://fast.test/p/new"], stats["https://slow.test/p/new"]
    assert new_fast["estimator"] == RateEstimator.PRIOR and new_fast["own_share"] == 0
    assert new_fast["change_rate"] == pytest.approx(new_fast["prior_rate"])
    assert abs(new_fast["change_rate"] - 0.5) < 0.3 * 0.5
    assert new_slow["change_rate"] < 0.1
    # In a pool of unlike pages a URL with a long history keeps mostly its own estimate ...
    assert stats["https://fast.test/p/0"]["own_share"] > 0.5
    # ... in a pool of alike pages the pool weighs more (empirical Bayes), but still not all.
    assert 0.2 < stats["https://slow.test/p/0"]["own_share"] < stats["https://fast.test/p/0"]["own_share"]


def test_a_boilerplate_only_change_counts_under_the_default_and_not_under_content(tmp_path):
    base = 0x5555_AAAA_5555_AAAA
    rows = []
    for day in range(10):
        # A CSRF token: a new payload digest every visit, the same change digest (volatile_parts.py);
        # its footer edited once, on day 6 (the change digest moves, the SimHash by one bit).
        footer = day // 6
        rows.append(fetch("https://a.test/footer", day, digest=f"c{day}", change_digest=f"f{footer}",
                          simhash=base ^ footer))
        # Real edits: SimHash moves 12 bits on even days.
        version = day // 2
        rows.append(fetch("https://a.test/edited", day, digest=f"e{version}", change_digest=f"e{version}",
                          simhash=base ^ (0xFFF if version % 2 else 0)))
    glob = write_log(tmp_path, rows)
    archive = {r["url"]: r for r in change_stats(glob, "2026-03-20", SETTINGS).urls.to_pylist()}
    content = {r["url"]: r for r in change_stats(glob, "2026-03-20", replace(SETTINGS, change_definition="content"))
               .urls.to_pylist()}
    # The footer edit is one change of the archived page, and no change of its content; the
    # token's every-visit moves are neither. Both report it as boilerplate-only.
    assert (archive["https://a.test/footer"]["changes"], content["https://a.test/footer"]["changes"]) == (1, 0)
    assert archive["https://a.test/footer"]["boilerplate_changes"] == content["https://a.test/footer"]["boilerplate_changes"] == 1
    assert archive["https://a.test/edited"]["changes"] == content["https://a.test/edited"]["changes"] == 4
    assert archive["https://a.test/footer"]["change_rate"] > content["https://a.test/footer"]["change_rate"]


def test_a_rendered_page_changes_with_its_rendered_dom_under_both_definitions(tmp_path):
    """A single-page app sends the same shell every day (one payload digest); what its script
    loads changes every third day, and the rendered row's change digest and SimHash are the
    DOM's (crawler/rendering/render_pass.py): those are its changes, under either definition."""
    base = 0x5555_AAAA_5555_AAAA
    rows = [fetch("https://spa.test/", day, digest="shell", change_digest=f"dom{day // 3}",
                  simhash=base ^ (0xFFF if day // 3 % 2 else 0)) for day in range(10)]
    glob = write_log(tmp_path, rows)
    for settings in (SETTINGS, replace(SETTINGS, change_definition="content")):
        page = change_stats(glob, "2026-03-20", settings).urls.to_pylist()[0]
        assert (page["changes"], page["boilerplate_changes"]) == (3, 0), settings.change_definition


def test_without_change_digests_a_new_payload_is_a_change_only_under_archive(tmp_path):
    """Fetch logs written before change_digest: the payload digest is what moved."""
    base = 0x5555_AAAA_5555_AAAA
    rows = [fetch("https://a.test/counter", day, digest=f"c{day}", simhash=base ^ (1 << day % 2)) for day in range(10)]
    glob = write_log(tmp_path, rows)
    content = replace(SETTINGS, change_definition="content")
    counter = change_stats(glob, "2026-03-20", content).urls.to_pylist()[0]
    assert (counter["changes"], counter["boilerplate_changes"]) == (0, 9)
    assert change_stats(glob, "2026-03-20", SETTINGS).urls.to_pylist()[0]["changes"] == 9
    # A threshold of 0 makes every digest change count under content too.
    strict = change_stats(glob, "2026-03-20", replace(content, near_dup_threshold=0)).urls.to_pylist()
    assert strict[0]["changes"] == 9


def test_304_is_unchanged_and_errors_are_not_visits(tmp_path):
    url = "https://a.test/page"
    rows = [fetch(url, 0, digest="v1", simhash=0, nbytes=5000), fetch(url, 1, status=304),
            fetch(url, 2, status=500), fetch(url, 3, status=304),
            fetch(url, 4, digest="v1", simhash=0, nbytes=5000),
            fetch(url, 5, digest="v2", simhash=0xFFFF, nbytes=6000)]
    result = change_stats(write_log(tmp_path, rows), "2026-03-10", SETTINGS)
    row = result.urls.to_pylist()[0]
    assert (row["visits"], row["intervals"], row["changes"], row["not_modified"]) == (5, 4, 1, 2)
    assert row["observed_days"] == pytest.approx(5.0)
    assert row["bytes_saved"] == 10_000
    assert result.counts.not_modified_share == pytest.approx(2 / 5)
    assert result.counts.bytes_saved == 10_000


def test_trailing_404s_are_counted(tmp_path):
    url = "https://a.test/gone"
    rows = [fetch(url, 0, digest="v1", simhash=0), fetch(url, 1, status=404), fetch(url, 2, status=404)]
    row = change_stats(write_log(tmp_path, rows), "2026-03-10", SETTINGS).urls.to_pylist()[0]
    assert (row["last_status"], row["gone_streak"], row["visits"]) == (404, 2, 1)


def test_last_modified_used_only_where_honest(tmp_path):
    rng = np.random.default_rng(4)
    honest = {f"https://honest.test/p/{i}": 0.3 for i in range(20)}
    rows = simulate(honest.items(), lambda r: list(range(0, 40, 4)), rng, lm_host="honest.test")
    # A host whose Last-Modified is always the fetch time.
    for i in range(20):
        for day in range(0, 40, 4):
            rows.append(fetch(f"https://liar.test/p/{i}", day, digest="same", simhash=7, last_modified=day))
    result = change_stats(write_log(tmp_path, rows), "2026-04-30", SETTINGS)
    hosts = {r["host"]: r for r in result.hosts.to_pylist()}
    assert hosts["honest.test"]["lm_trusted"] and not hosts["liar.test"]["lm_trusted"]
    urls = result.urls.to_pylist()
    assert {r["estimator"] for r in urls if r["host"] == "honest.test"} == {RateEstimator.LAST_MODIFIED}
    assert RateEstimator.LAST_MODIFIED not in {r["estimator"] for r in urls if r["host"] == "liar.test"}
    # Visiting every 4 days, a 0.3/day page changes more often than visits show; the
    # Last-Modified estimate sees the time since the last change and is not fooled.
    assert np.median([r["change_rate"] for r in urls if r["host"] == "honest.test"]) > 0.8 * 0.3
    assert result.counts.lm_trusted_hosts == 1


def test_sitemap_lastmod_marks_changes(tmp_path):
    url = "https://a.test/listed"
    rows = [fetch(url, day, digest="same", simhash=3) for day in (0, 10, 20)]
    evidence = pa.table({"url": [url, url], "lastmod": [START + timedelta(days=5), START + timedelta(days=25)]})
    row = change_stats(write_log(tmp_path, rows), "2026-03-30", SETTINGS, lastmod_evidence=evidence).urls.to_pylist()[0]
    assert row["changes"] == 1  # the lastmod on day 5, between the visits of days 0 and 10
    assert row["pending_change"]  # day 25 is after the last visit
    plain = change_stats(str(tmp_path / "fetch_log" / "*" / "*" / "*.parquet"), "2026-03-30", SETTINGS).urls
    assert plain["changes"].to_pylist() == [0] and plain["pending_change"].to_pylist() == [False]


def test_only_fetches_up_to_the_date_count(tmp_path):
    url = "https://a.test/p"
    rows = [fetch(url, day, digest=f"v{day}", simhash=day * 0xFFFF) for day in range(6)]
    glob = write_log(tmp_path, rows)
    assert change_stats(glob, "2026-03-03", SETTINGS).urls["visits"].to_pylist() == [3]


def test_unreadable_fetch_log_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="fetch log .*nowhere"):
        change_stats(str(tmp_path / "nowhere" / "*.parquet"), "2026-03-03", SETTINGS)


def varied_history(rng):
    """Twelve days of a crawl with every kind of visit the estimators look at: regular and
    irregular visits, several fetches of a URL in one day, honest and lying Last-Modified,
    boilerplate-only edits, 304s, errors, 404 runs across days, URLs first seen late."""
    daily = {f"https://a.test/p/{i}": rate for i, rate in enumerate(np.linspace(0.05, 1.5, 12))}
    rows = simulate(daily.items(), lambda r: list(np.arange(12) + r.uniform(0.1, 0.9, 12)), rng)
    honest = {f"https://lm.test/p/{i}": 0.3 for i in range(10)}
    rows += simulate(honest.items(), lambda r: list(np.sort(r.uniform(0, 11.99, 8))), rng, lm_host="lm.test")
    late = {f"https://late.test/p/{i}": 0.5 for i in range(6)}
    rows += simulate(late.items(), lambda r: list(7 + np.sort(r.uniform(0, 4.99, 4))), rng)
    base = 0x5555_AAAA_5555_AAAA
    for day in range(12):
        # A new token every visit, a footer edit every four days (its change digest moves)
        rows.append(fetch("https://b.test/counter", day + 0.3, digest=f"c{day}", simhash=base ^ (1 << day % 2),
                          change_digest=f"c{day // 4}"))
        rows.append(fetch("https://b.test/twice", day + 0.2, digest=f"t{day // 3}", simhash=base ^ (day // 3) * 0xFFF))
        rows.append(fetch("https://b.test/twice", day + 0.7, status=304 if day % 2 else 200,
                          digest=f"t{day // 3}", simhash=base ^ (day // 3) * 0xFFF))
        rows.append(fetch("https://liar.test/p", day + 0.5, digest="same", simhash=7, last_modified=day + 0.5))
        gone = day >= 8 or day in (3, 4)  # a 404 run that ends, then one across the last days
        rows.append(fetch("https://b.test/gone", day + 0.4, status=404 if gone else 200,
                          digest=None if gone else "g", simhash=None if gone else 1))
        if day % 4 == 1:
            rows.append(fetch("https://b.test/flaky", day + 0.1, status=500))
        rows.append(fetch("https://b.test/flaky", day + 0.6, digest=f"f{day // 5}", simhash=(day // 5) * 0xFFFF))
    return rows


def assert_same_rows(rows_a: list[dict], rows_b: list[dict], key: str):
    """Equal row by row; floats within rounding (sums added in another order), lists as sets."""
    assert [r[key] for r in rows_a] == [r[key] for r in rows_b]
    for a, b in zip(rows_a, rows_b):
        assert a.keys() == b.keys()
        for column, value in b.items():
            if isinstance(value, float):
                assert a[column] == pytest.approx(value, rel=1e-9, abs=1e-12), (a[key], column)
            elif isinstance(value, list):
                assert sorted(a[column]) == pytest.approx(sorted(value), rel=1e-12), (a[key], column)
            else:
                assert a[column] == value, (a[key], column)


def daily_steps(tmp_path, days: int, evidence=None):
    """change_stats of each day folded into the day before's state files under tmp_path."""
    previous = None
    for day in range(days):
        date = (START + timedelta(days=day)).date().isoformat()
        day_files = str(tmp_path / "fetch_log" / f"date={date}" / "*" / "*.parquet")
        daily = change_stats(day_files, date, SETTINGS, lastmod_evidence=evidence, previous=previous,
                             state_root=tmp_path)
        assert daily.state == url_state(tmp_path, date)
        previous = daily.state
        yield date, daily


def test_daily_step_equals_the_full_rebuild(tmp_path, monkeypatch):
    """change_stats[D] folded from change_stats[D-1] and day D's log alone, day after day,
    equals change_stats rebuilt from the whole history on every day: across deltas (the
    newest row of a URL wins) and across a compaction into a new base."""
    # Only the chain's length compacts here (nearly every URL is fetched every day).
    monkeypatch.setattr(url_change_state, "COMPACT_DELTA_SHARE", 1e9)
    rows = varied_history(np.random.default_rng(5))
    # Fetched on the second day only, then listed with a new date on day 5: its state must
    # survive the deltas and the compaction, and its pending change appear without a fetch.
    rows.append(fetch("https://once.test/p", 1.5, digest="o", simhash=1))
    glob = write_log(tmp_path, rows)
    evidence = pa.table({"url": ["https://b.test/counter", "https://a.test/p/0", "https://a.test/p/0",
                                 "https://once.test/p"],
                         "lastmod": [START + timedelta(days=4.5), START + timedelta(days=2.95),
                                     START + timedelta(days=11.99), START + timedelta(days=5.5)]})
    deltas = []
    for date, daily in daily_steps(tmp_path, 12, evidence):
        full = change_stats(glob, date, SETTINGS, lastmod_evidence=evidence)
        assert_same_rows(read_change_stats(tmp_path, date).to_pylist(), full.urls.to_pylist(), "url")
        assert_same_rows(daily.hosts.to_pylist(), full.hosts.to_pylist(), "host")
        assert_same_rows([asdict(daily.counts)], [asdict(full.counts)], "urls")
        assert daily.rate_bands.equals(full.rate_bands)
        deltas.append(len(daily.state.deltas))
    # A base on the first day, deltas after it, a new base once the chain reached its limit.
    limit = url_change_state.COMPACT_AFTER_DAYS
    assert deltas == [0, *range(1, limit), 0, *range(1, 12 - limit)]
    assert url_state_base_file(tmp_path, "2026-03-08").exists() and not url_state_delta_file(tmp_path, "2026-03-08").exists()
    # A delta holds the URLs the day changed, not every URL.
    delta = pq.read_table(url_state_delta_file(tmp_path, "2026-03-06"))
    assert "https://once.test/p" in delta["url"].to_pylist()  # its pending change flipped on day 5
    assert len(delta) < len(full.urls) - 6  # the late.test URLs and lm.test's unvisited ones are not in it
    once = next(r for r in full.urls.to_pylist() if r["url"] == "https://once.test/p")
    assert once["visits"] == 1 and once["pending_change"]
    urls = {r["url"]: r for r in full.urls.to_pylist()}
    # The history covered what it should: several estimators, a 404 run over days, boilerplate.
    assert {r["estimator"] for r in urls.values()} >= {RateEstimator.MLE, RateEstimator.LAST_MODIFIED,
                                                       RateEstimator.BIAS_REDUCED}
    assert urls["https://b.test/gone"]["gone_streak"] == 4
    # two footer edits, and a sitemap date (archive: the edits are changes too)
    assert urls["https://b.test/counter"]["boilerplate_changes"] == 2 and urls["https://b.test/counter"]["changes"] == 3
    assert urls["https://b.test/twice"]["not_modified"] == 6 and urls["https://late.test/p/0"]["visits"] == 4


def test_a_missing_or_corrupt_delta_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(url_change_state, "COMPACT_DELTA_SHARE", 1e9)  # deltas although every URL is fetched
    rows = [fetch(f"https://a.test/p/{i}", day + 0.5, digest=f"v{day}", simhash=day * 0xFFFF)
            for day in range(3) for i in range(3)]
    write_log(tmp_path, rows)
    assert [len(d.state.deltas) for _, d in daily_steps(tmp_path, 3)] == [0, 1, 2]
    read_change_stats(tmp_path, "2026-03-03")  # readable as written
    delta = url_state_delta_file(tmp_path, "2026-03-02")
    delta.write_bytes(b"not parquet")
    with pytest.raises(CrawlInputError, match=f"{delta}.*cannot be read.*materialise change_stats"):
        read_change_stats(tmp_path, "2026-03-03")
    delta.unlink()
    with pytest.raises(CrawlInputError, match=f"{delta} is missing.*materialise change_stats for 2026-03-02"):
        url_state(tmp_path, "2026-03-03")


def test_a_day_without_pool_sums_sums_the_day_before_once(tmp_path, monkeypatch):
    """The pools' sums are updated from day to day (pool_sums.py); a day before written without
    its sums file (an older layout) is summed once from its state, with the rebuild's result;
    a sums file that cannot be read is named in the error."""
    monkeypatch.setattr(url_change_state, "COMPACT_DELTA_SHARE", 1e9)
    glob = write_log(tmp_path, varied_history(np.random.default_rng(7)))
    for before, daily in daily_steps(tmp_path, 3):
        pass
    assert daily.state.sums == pool_sums_file(tmp_path, before) and daily.state.sums.exists()
    daily.state.sums.unlink()
    assert url_state(tmp_path, before).sums is None
    date = (START + timedelta(days=3)).date().isoformat()
    day_files = str(tmp_path / "fetch_log" / f"date={date}" / "*" / "*.parquet")
    daily = change_stats(day_files, date, SETTINGS, previous=url_state(tmp_path, before), state_root=tmp_path)
    full = change_stats(glob, date, SETTINGS)
    assert_same_rows(read_change_stats(tmp_path, date).to_pylist(), full.urls.to_pylist(), "url")
    assert_same_rows(daily.hosts.to_pylist(), full.hosts.to_pylist(), "host")
    daily.state.sums.write_bytes(b"not parquet")
    with pytest.raises(CrawlInputError, match=f"{daily.state.sums}.*cannot be read.*materialise change_stats"):
        change_stats(day_files.replace(date, "2026-03-05"), "2026-03-05", SETTINGS, previous=daily.state,
                     state_root=tmp_path)


def test_host_rates_quantiles_and_bands_are_those_of_every_urls_rate(tmp_path):
    # The host table's mean and median rate, the rate quantiles and the rate bands are read
    # off every URL's published rate: the same as DuckDB's avg, median and quantile_cont.
    import duckdb

    rows = varied_history(np.random.default_rng(7))
    stats = change_stats(write_log(tmp_path, rows), (START + timedelta(days=11)).date(), SETTINGS)
    urls = stats.urls.select(["host", "change_rate"])
    assert len(urls) > 30
    con = duckdb.connect()
    con.register("urls", urls)
    expected = {host: (mean, median) for host, mean, median in con.execute(
        "SELECT host, avg(change_rate), median(change_rate) FROM urls GROUP BY host").fetchall()}
    assert sorted(expected) == stats.hosts["host"].to_pylist()
    for host, mean, median in zip(*(stats.hosts[c].to_pylist() for c in ("host", "mean_rate", "median_rate"))):
        if expected[host][0] is None:  # no URL of the host has a rate
            assert (mean, median) == (None, None)
        else:
            assert (mean, median) == pytest.approx(expected[host], rel=1e-12)
    quantiles = con.execute("SELECT quantile_cont(change_rate, [0.1, 0.5, 0.9, 0.99]) FROM urls").fetchone()[0]
    counts = stats.counts
    assert [counts.rate_p10, counts.rate_p50, counts.rate_p90, counts.rate_p99] == pytest.approx(quantiles, rel=1e-12)
    bands = stats.rate_bands.to_pylist()
    uppers = [b["changes_a_day_below"] or float("inf") for b in bands]
    lowers = [0.0] + uppers[:-1]
    rates = urls["change_rate"].to_pylist()
    assert [b["urls"] for b in bands] == [sum(lo <= r < up for r in rates) for lo, up in zip(lowers, uppers)]
    assert sum(b["urls"] for b in bands) == len(rates) == counts.urls


# A first sighting is not a change (issue 28): a Last-Modified seen once says when the page
# last changed, not how often, so a URL visited once is on its pool's prior.

def trusted_lm_host(rng, days: int = 40):
    """Twenty pages of lm.test changing 0.3 times a day, visited daily with an honest
    Last-Modified: the host is trusted and its pool has a prior of its own."""
    pages = {f"https://lm.test/p/{i}": 0.3 for i in range(20)}
    return simulate(pages.items(), lambda r: list(np.arange(days) + r.uniform(0.3, 0.7, days)), rng,
                    lm_host="lm.test")


def test_a_last_modified_of_the_first_visits_day_gives_no_rate_above_the_prior(tmp_path):
    """Pages first fetched minutes after midnight whose Last-Modified is that midnight (the
    first-day crawl of issue 28) are on their pool's prior after one visit: no change counted
    over the minutes, and the pool's prior the same as without them."""
    history = trusted_lm_host(np.random.default_rng(8))
    new = [fetch(f"https://lm.test/p/new{i}", 40 + (i + 1) / 1440, digest=f"n{i}", simhash=i * 0xFFFF,
                 last_modified=40) for i in range(10)]
    day = (START + timedelta(days=40)).date()
    stats = change_stats(write_log(tmp_path / "with", history + new), day, SETTINGS)
    assert {r["host"]: r["lm_trusted"] for r in stats.hosts.to_pylist()} == {"lm.test": True}
    rows = {r["url"]: r for r in stats.urls.to_pylist()}
    for i in range(10):
        row = rows[f"https://lm.test/p/new{i}"]
        assert row["on_prior"] and row["estimator"] == RateEstimator.PRIOR
        assert row["observed_days"] == 0 and row["own_share"] == 0 and row["lm_changes"] == 0
        assert row["change_rate"] <= row["prior_rate"]
        assert row["change_rate"] == pytest.approx(row["prior_rate"], rel=1e-12)
    # Their first sighting moved nothing: the pool's prior is the one of the old pages alone.
    without = change_stats(write_log(tmp_path / "without", history), day, SETTINGS).urls.to_pylist()
    assert rows["https://lm.test/p/0"]["prior_rate"] == pytest.approx(without[0]["prior_rate"], rel=1e-9)
    assert rows["https://lm.test/p/0"]["prior_rate"] < 0.6  # near the pages' 0.3, not 1 / minutes
    assert not any(r["on_prior"] for r in without)


def test_a_web_born_on_the_crawls_first_day_learns_from_second_visits(tmp_path):
    """Every page's Last-Modified is the first day's midnight. Day after day (the daily step):
    a URL visited once stays on the prior; from the second visit on, Last-Modified counts, and
    pages that never change fall below the prior while pages that change daily rise above it."""
    history = trusted_lm_host(np.random.default_rng(9), days=7)
    for i in range(30):
        url = f"https://lm.test/q/{i}"
        history.append(fetch(url, (i + 1) / 1440, digest=f"{url}#0", simhash=i * 0xFFFF, last_modified=0))
        if i >= 20:  # visited once
            continue
        for day in range(1, 7):
            version = day if i >= 10 else 0  # pages 10-19 change just after every midnight
            history.append(fetch(url, day + 0.5, digest=f"{url}#{version}",
                                 simhash=(i * 0xFFFF) ^ (0x5555_AAAA_5555_AAAA if version % 2 else 0),
                                 last_modified=day + 0.01 if version else 0))
    write_log(tmp_path, history)
    for date, daily in daily_steps(tmp_path, 7):
        rows = {r["url"]: r for r in read_change_stats(tmp_path, date).to_pylist()}
        if date == START.date().isoformat():  # one visit each, nothing known anywhere
            assert all(r["on_prior"] for r in rows.values())
            assert [r["change_rate"] for r in rows.values()] == pytest.approx([DEFAULT_PRIOR_RATE] * len(rows))
    once, never, daily_changing = ([rows[f"https://lm.test/q/{i}"] for i in range(lo, lo + 10)] for lo in (20, 0, 10))
    assert all(r["on_prior"] and r["change_rate"] == pytest.approx(r["prior_rate"], rel=1e-12) for r in once)
    assert all(r["estimator"] == RateEstimator.LAST_MODIFIED and not r["on_prior"] for r in never + daily_changing)
    assert all(r["change_rate"] < r["prior_rate"] for r in never)
    assert all(r["change_rate"] > r["prior_rate"] for r in daily_changing)
    assert max(r["change_rate"] for r in never) < min(r["change_rate"] for r in daily_changing)
    assert all(r["lm_changes"] == 6 for r in daily_changing) and all(r["lm_changes"] == 0 for r in never)


def test_a_sitemap_date_before_the_first_visit_is_no_change(tmp_path):
    """A sitemap <lastmod> seen once, dated before the first visit, says when the page last
    changed: no change at the next visit, and a URL visited once stays on the prior."""
    rows = [fetch("https://a.test/twice", day, digest="same", simhash=3) for day in (1, 3)]
    rows.append(fetch("https://a.test/once", 3, digest="other", simhash=5))
    evidence = pa.table({"url": ["https://a.test/twice", "https://a.test/once"],
                         "lastmod": [START + timedelta(days=0.99), START + timedelta(days=2.99)]})
    rows = {r["url"]: r for r in change_stats(write_log(tmp_path, rows), "2026-03-05", SETTINGS,
                                              lastmod_evidence=evidence).urls.to_pylist()}
    assert rows["https://a.test/twice"]["changes"] == 0 and not rows["https://a.test/twice"]["on_prior"]
    assert rows["https://a.test/once"]["on_prior"]
    assert rows["https://a.test/once"]["change_rate"] == pytest.approx(rows["https://a.test/once"]["prior_rate"])


def test_the_prior_of_a_pool_seen_unchanged_falls_as_its_evidence_grows(tmp_path):
    """Pages that never change (no validators: each visit a full answer) pull their own
    pool's prior down as their unchanged days add up: against the prior of a host whose
    pages change it falls every day (everyone's rate, which both lean on, moves with the
    busy host's luck), and their own rates fall with it."""
    rows = simulate({f"https://busy.test/p/{i}": 0.5 for i in range(10)}.items(),
                    lambda r: list(np.arange(8) + r.uniform(0.3, 0.7, 8)), np.random.default_rng(10))
    rows += [fetch(f"https://still.test/p/{i}", day + 0.5, digest=f"s{i}", simhash=i * 0xFFFF)
             for i in range(10) for day in range(8)]
    write_log(tmp_path, rows)
    still_prior, busy_prior, still_rate = [], [], []
    for date, _ in daily_steps(tmp_path, 8):
        rows = read_change_stats(tmp_path, date).to_pylist()
        still_prior.append(next(r["prior_rate"] for r in rows if r["host"] == "still.test"))
        busy_prior.append(next(r["prior_rate"] for r in rows if r["host"] == "busy.test"))
        still_rate.append(max(r["change_rate"] for r in rows if r["host"] == "still.test"))
    assert still_prior[0] == busy_prior[0] == pytest.approx(DEFAULT_PRIOR_RATE)  # day 0: no evidence anywhere
    relative = [s / b for s, b in zip(still_prior[1:], busy_prior[1:])]
    assert all(later < earlier for earlier, later in zip(relative, relative[1:])), relative
    assert still_prior[-1] < 0.5 * still_prior[1] and still_rate[-1] < 0.5 * still_rate[1]
    assert all(rate < prior for rate, prior in zip(still_rate[1:], still_prior[1:]))


def test_a_first_sightings_age_on_an_honest_host_is_survival_evidence_for_that_url_alone(tmp_path):
    """Two pages of one pool visited once, their Last-Modified 2 and 400 days before the visit:
    on a host whose Last-Modified is trusted the older one's rate is the lower, both at most the
    prior (the Gamma posterior after that many days without a change), and the pool's prior is
    what it is without them; a page seen unchanged again adds its visits' days to its age; on
    a host whose Last-Modified is not trusted the ages change nothing."""
    rng = np.random.default_rng(11)
    history = trusted_lm_host(rng)
    # liar.test: twenty pages that never change, their Last-Modified always the fetch's time.
    history += [fetch(f"https://liar.test/p/{i}", day + 0.5, digest=f"l{i}", simhash=i * 0xFFFF,
                      last_modified=day + 0.5) for i in range(20) for day in range(40)]
    once = {"young": 2, "old": 400}
    day_40 = 40.5
    new = [fetch(f"https://{host}/p/{100 + k}", day_40, digest=f"{host}{name}", simhash=(k + 7) * 0xFFFF,
                 last_modified=day_40 - age)
           for host in ("lm.test", "liar.test") for k, (name, age) in enumerate(once.items())]
    # p/102: seen at 30.5 with a Last-Modified 400 days old, unchanged at 40.5: the visits add to the age
    history += [fetch("https://lm.test/p/102", d, digest="kept", simhash=9 * 0xFFFF, last_modified=30.5 - 400)
                for d in (30.5, day_40)]
    day = (START + timedelta(days=41)).date()
    stats = change_stats(write_log(tmp_path / "with", history + new), day, SETTINGS)
    assert {r["host"]: r["lm_trusted"] for r in stats.hosts.to_pylist()} == {"lm.test": True, "liar.test": False}
    rows = {r["url"]: r for r in stats.urls.to_pylist()}
    young, old = rows["https://lm.test/p/100"], rows["https://lm.test/p/101"]
    assert young["url_pattern"] == old["url_pattern"] == rows["https://lm.test/p/0"]["url_pattern"]
    for row, age in ((young, 2), (old, 400)):
        assert row["on_prior"] and row["estimator"] == RateEstimator.PRIOR and row["lm_changes"] == 0
        assert row["change_rate"] <= row["prior_rate"]
        # the first day after the Last-Modified is not counted (url_change_state.FIRST_SIGHTING_GRACE_DAYS)
        days = age - url_change_state.FIRST_SIGHTING_GRACE_DAYS
        assert row["observed_days"] == pytest.approx(days)
        assert row["change_rate"] == pytest.approx(
            row["prior_rate"] * row["prior_days"] / (row["prior_days"] + days), rel=1e-9)
    assert old["change_rate"] < young["change_rate"] < young["prior_rate"]
    assert old["change_rate"] < 0.2 * old["prior_rate"]
    kept = rows["https://lm.test/p/102"]
    assert not kept["on_prior"] and kept["estimator"] == RateEstimator.LAST_MODIFIED
    assert kept["observed_days"] == pytest.approx(410 - url_change_state.FIRST_SIGHTING_GRACE_DAYS)
    assert kept["change_rate"] < old["change_rate"]
    # Nothing of the ages reached the pool: its prior is the one without the pages visited once.
    without = change_stats(write_log(tmp_path / "without", history), day, SETTINGS).urls.to_pylist()
    prior_without = {r["host"]: r["prior_rate"] for r in without if r["url"].endswith("/p/0")}
    assert young["prior_rate"] == pytest.approx(prior_without["lm.test"], rel=1e-9)
    # An untrusted host's ages are no evidence: both pages exactly on their pool's prior.
    for k in (100, 101):
        row = rows[f"https://liar.test/p/{k}"]
        assert row["on_prior"] and row["observed_days"] == 0 and row["own_share"] == 0
        assert row["change_rate"] == pytest.approx(row["prior_rate"], rel=1e-12)
        assert row["prior_rate"] == pytest.approx(prior_without["liar.test"], rel=1e-9)
