"""Crawler traps over several cycles: each trap host stays within its budget, the reasons
are counted in the catalog, and an ordinary host beside them is crawled completely."""

import duckdb
import pytest
from dagster import instance_for_test

from crawl_assets.cycle import run_cycle
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
        with instance_for_test() as instance:
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
        if trap.real_pages is not None:  # session ids stripped: only the real pages exist
            distinct = con.execute("SELECT count(DISTINCT url) FROM fetches WHERE host = ?",
                                   [trap.hostname]).fetchone()[0]
            assert distinct <= trap.real_pages + 1, (trap.kind, distinct)  # + its sitemap.xml link
    assert_polite(rows, TEST_DELAY_S)


def test_the_reasons_are_counted_per_host_in_the_catalog(crawl):
    web, settings, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    reasons = {}
    for host, reason, urls in con.execute(
            "SELECT host, reason, sum(urls) FROM dropped_urls GROUP BY ALL ORDER BY ALL").fetchall():
        reasons.setdefault(host, {})[reason] = urls
    print("\nURLs dropped per trap host:", *(f"{h}: {r}" for h, r in reasons.items()), sep="\n  ")
    by_kind = {t.kind: reasons.get(t.hostname, {}) for t in web.trap_hosts()}
    assert by_kind["calendar"].get("pattern_budget")
    assert by_kind["facets"].get("pattern_budget") or by_kind["facets"].get("too_many_query_params")
    assert by_kind["deep_paths"].get("repeated_path_segments")
    assert by_kind["random_links"].get("host_growth_capped") or by_kind["random_links"].get("host_budget")


def test_an_ordinary_host_beside_the_traps_is_crawled_completely(crawl):
    web, settings, _ = crawl
    con = duckdb.connect(str(settings.catalog_path), read_only=True)
    fetched = {r[0] for r in con.execute("SELECT url FROM fetches WHERE status IN (200, 304)").fetchall()}
    disallowed = tuple(web.robots_rules(0)["disallow"])
    expected = {u for u in web.page_urls(0) if not disallowed or disallowed[0] not in u}
    assert expected <= fetched


def test_the_next_frontier_says_how_many_known_urls_it_left_out_and_why(crawl):
    from crawl_assets.assets.frontier import build_frontier

    web, settings, _ = crawl
    frontier, left_out = build_frontier(settings, "2026-11-30")
    hosts = frontier.column("host").to_pylist()
    for trap in web.trap_hosts():
        assert hosts.count(trap.hostname) <= BUDGET
    assert left_out.get("host_budget", 0) > 0 and left_out.get("pattern_budget", 0) > 0
    assert set(left_out) <= {"out_of_scope", "host_budget", "pattern_budget", "url_too_long",
                             "too_many_query_params", "repeated_path_segments",
                             "blocklist_host", "blocklist_url"}
