"""Crawler traps over several cycles: each trap host stays within its budget, the reasons
are counted in the catalog, and an ordinary host beside them is crawled completely."""

import duckdb
import pytest
from dagster import DagsterInstance

from crawl_assets.cli.cycle import run_cycle
from crawl_assets.crawler.vocabulary import DropReason
from support import TEST_DELAY_S, DemoWebProcess, assert_polite, write_test_settings

DAYS = ["2026-11-27", "2026-11-28", "2026-11-29"]
BUDGET = 40


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traps")
    with DemoWebProcess(seed=9, hosts=1, pages_per_host=30, traps=True) as server:
        resource = write_test_settings(
            folder, server.web,
            extra="max_urls_per_pattern = 15\nhost_growth_min_urls = 150\n")  # budget: 40
        with DagsterInstance.ephemeral() as instance:
            for day in DAYS:
                run_cycle(day, instance, resource)
        rows = server.stop()
    return server.web, resource.load(), rows


def fetched_per_day(con, host):
    return dict(con.execute("SELECT CAST(date AS VARCHAR), count(*) FROM fetches WHERE host = ? "
                            "AND status IS NOT NULL GROUP BY ALL", [host]).fetchall())


def test_every_trap_host_stays_within_its_budget_every_cycle(crawl):
    web, settings, rows = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    for trap in web.trap_hosts():
        per_day = fetched_per_day(con, trap.hostname)
        assert set(per_day) == set(DAYS), trap.kind  # crawled every day ...
        assert max(per_day.values()) <= BUDGET, (trap.kind, per_day)  # ... within budget
        if trap.kind != "session_ids":  # flagged when day 1 closed: the small budget after
            assert all(per_day[day] <= settings.flagged_host_budget for day in DAYS[1:]), (trap.kind, per_day)
        if trap.real_pages is not None:  # session ids stripped: only the real pages exist
            distinct = con.execute("SELECT count(DISTINCT url) FROM fetches WHERE host = ?",
                                   [trap.hostname]).fetchone()[0]
            assert distinct <= trap.real_pages + 1, (trap.kind, distinct)  # + its sitemap.xml link
    assert_polite(rows, TEST_DELAY_S, response_time_factor=settings.response_time_factor,
                  max_adaptive_delay_s=settings.max_adaptive_delay_s)


def test_the_reasons_are_counted_per_host_in_the_catalog(crawl):
    web, settings, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    reasons = {}
    for host, reason, urls in con.execute(
            "SELECT host, reason, sum(urls) FROM dropped_urls GROUP BY ALL ORDER BY ALL").fetchall():
        reasons.setdefault(host, {})[reason] = urls
    print("\nURLs dropped per trap host:", *(f"{h}: {r}" for h, r in reasons.items()), sep="\n  ")
    by_kind = {t.kind: set(reasons.get(t.hostname, {})) for t in web.trap_hosts()}
    R = DropReason
    assert by_kind == {
        # Two query shapes (?month= and ?day=&month=) at 15 URLs each stay under the host
        # budget (40): only the pattern budget can stop the endless months.
        "calendar": {R.PATTERN_BUDGET},
        # Session ids are stripped by normalisation: nothing is left to drop.
        "session_ids": set(),
        # Each page links to ~100 one-filter-changed listings: the growth cap fires on day 1
        # and again on the later days, whose small budget goes to the one-filter pages already
        # held (their links refused by the cap before any query shape fills its budget); never
        # too_many_query_params (at most 10 filters, the cap is max_query_params = 10).
        "facets": {R.HOST_GROWTH_CAPPED, R.HOST_BUDGET},
        # Paths repeat their last two segments: the repeated-segment rule (and the budget).
        "deep_paths": {R.REPEATED_PATH_SEGMENTS, R.HOST_BUDGET},
        # 25-35 new URLs a page: past 150 new URLs and 10x the pages fetched, the HyperLogLog
        # growth cap; its /search?page=&q=&ref= links also share one query shape.
        "random_links": {R.HOST_GROWTH_CAPPED, R.PATTERN_BUDGET, R.HOST_BUDGET},
    }
    # Each dropped link in the links table carries the reason its URL shape calls for.
    link_reasons = {}
    for host, reason, target in con.execute(
            "SELECT target_host, dropped_reason, target FROM links WHERE dropped_reason IS NOT NULL").fetchall():
        link_reasons.setdefault(host, {}).setdefault(reason, []).append(target)
    kinds = {t.hostname: t.kind for t in web.trap_hosts()}
    for host, by_reason in link_reasons.items():
        for reason, targets in by_reason.items():
            if reason == R.PATTERN_BUDGET:
                assert all("?" in t for t in targets), (host, reason)  # only URLs with a query
            elif reason == R.REPEATED_PATH_SEGMENTS:
                assert kinds[host] == "deep_paths", host
            else:
                assert reason == R.HOST_GROWTH_CAPPED and kinds[host] in ("facets", "random_links"), \
                    (host, reason)


def test_an_ordinary_host_beside_the_traps_is_crawled_completely(crawl):
    web, settings, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    fetched = {r[0] for r in con.execute("SELECT url FROM fetches WHERE status IN (200, 304)").fetchall()}
    disallowed = tuple(web.robots_rules(0)["disallow"])
    expected = {u for u in web.page_urls(0) if not disallowed or disallowed[0] not in u}
    assert expected <= fetched


def test_the_next_frontier_says_how_many_known_urls_it_left_out_and_why(crawl):
    from crawl_assets.pipeline.crawl_history import history_before
    from crawl_assets.pipeline.frontier_step import build_frontier

    web, settings, _ = crawl
    frontier = build_frontier(settings, history_before(settings.data_root, "2026-11-30"))
    hosts = frontier.table.column("host").to_pylist()
    for trap in web.trap_hosts():
        assert hosts.count(trap.hostname) <= BUDGET
    left_out = frontier.counts.left_out_by_reason
    # (the frontier's pattern budget over known URLs: test_frontier_step; here the batches'
    # pattern budget and growth cap kept each trap's known URLs of one shape under it)
    assert left_out.get(DropReason.HOST_BUDGET, 0) > 0
    assert set(left_out) <= {DropReason.OUT_OF_SCOPE, DropReason.HOST_BUDGET, DropReason.PATTERN_BUDGET,
                             DropReason.URL_TOO_LONG, DropReason.TOO_MANY_QUERY_PARAMS,
                             DropReason.REPEATED_PATH_SEGMENTS, DropReason.BLOCKLIST_HOST,
                             DropReason.BLOCKLIST_URL, DropReason.DEPTH}
