"""Adaptive recrawl over five days of the demo web, which changes between days like the real
web (Poisson changes per page, honest validators): each day's frontier follows the plan
recrawl_priorities made the evening before. Daily-changing pages come back sooner than
never-changing ones, unchanged pages answer 304, the daily budget holds every day, and the
trap hosts flagged on day one get the small budget from day two on.

The days run the pipeline steps the assets call, in the order a day's runs take (frontier,
every shard's fetch, the close: URL registry and seen filter, change_stats, recrawl_priorities),
without Dagster's run machinery, so five days stay fast; test_traps_over_cycles runs the same
plan through Dagster.
"""

from collections import Counter
from datetime import date as Date
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crawl_assets.crawler.url_policy.seed_files import read_seed_files
from crawl_assets.crawler.url_policy.url_bloom import save_filter
from crawl_assets.crawler.url_policy.urls import host_of
from crawl_assets.crawler.vocabulary import DropReason, StatusClass
from crawl_assets.pipeline.change_stats.change_evidence import trusted_change_evidence
from crawl_assets.pipeline.change_stats.change_stats_step import change_stats
from crawl_assets.pipeline.change_stats.url_change_state import read_change_stats
from crawl_assets.pipeline.crawl_history import history_before, history_through
from crawl_assets.pipeline.fetch_step import fetch_inputs, run_fetch_step
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.pipeline.priorities.priorities_step import recrawl_priorities
from crawl_assets.pipeline.priorities.recrawl_plan import next_day, plan_path
from crawl_assets.pipeline.recrawl_inputs import HostFlag, change_stats_sources, host_budgets, priorities_inputs
from crawl_assets.pipeline.registry_step import build_registry, build_seen_filter, load_registry_urls
from crawl_assets.storage.layout import (
    change_evidence_file,
    dropped_file,
    fetch_log_file,
    frontier_file,
    glob_of,
    links_file,
    priorities_file,
    priority_hosts_file,
    seen_filter_file,
    seeds_file,
    shard_files,
    url_registry_file,
    warc_dir,
    write_parquet_atomic,
)
from demoweb.ordinary.change_model import EPOCH
from support import DemoWebProcess, write_test_settings

DAYS = ["2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23", "2026-11-24"]
BUDGET, FLAGGED_BUDGET, HOST_BUDGET = 70, 3, 40
# The first day has its own budget, larger than the daily one: it learns the whole small web.
FIRST_DAY_BUDGET = 2000
WEB = {"seed": 4, "hosts": 4, "pages_per_host": 16, "traps": True}


def demo_day(date: str) -> int:
    """The demo web's day number of a crawl date: the web is served as it is that morning."""
    return (Date.fromisoformat(date) - EPOCH.date()).days


def crawl_day(settings, day: str) -> None:
    """One day of the pipeline, each step's output written where its asset writes it."""
    root = settings.data_root
    frontier = build_frontier(settings, history_before(root, day), plan_path(root, day))
    for shard, rows in frontier.shard_tables():
        write_parquet_atomic(rows, frontier_file(root, day, shard))
        if rows.num_rows:
            result = run_fetch_step(settings, shard, fetch_inputs(root, day, shard, settings),
                                    warc_dir(root, day, shard), warc_prefix=f"test-{day}-{shard}")
            write_parquet_atomic(result.fetch_log, fetch_log_file(root, day, shard))
            write_parquet_atomic(result.links, links_file(root, day, shard))
            write_parquet_atomic(result.dropped, dropped_file(root, day, shard))
            write_parquet_atomic(result.change_evidence, change_evidence_file(root, day, shard))
    write_parquet_atomic(build_registry(day, history_through(root, day)).table, url_registry_file(root, day))
    save_filter(build_seen_filter(load_registry_urls(root, day)), seen_filter_file(root, day))
    # From the second day on, the day's fetches are folded into the day before's statistics.
    sources = change_stats_sources(root, day)
    assert (sources.previous is None) == (day == DAYS[0])
    change_stats([str(p) for p in sources.fetch_logs], day, settings, lastmod_evidence=trusted_change_evidence(root, day),
                 previous=sources.previous, state_root=root)
    inputs = priorities_inputs(root, day, settings)
    plan = recrawl_priorities(inputs.change_stats, None, inputs.hosts, inputs.known_urls, next_day(day), settings,
                              urls_out=priorities_file(root, day))
    write_parquet_atomic(host_budgets(inputs.hosts, plan.hosts), priority_hosts_file(root, day))


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recrawl_days")
    port = 0
    for day in DAYS:
        # The same port every day, so URLs stay the same; the web moves on a day each time.
        with DemoWebProcess(port=port, day=demo_day(day), **WEB) as server:
            if day == DAYS[0]:
                port = server.port
                resource = write_test_settings(
                    folder, server.web, extra=f"daily_fetch_budget = {BUDGET}\n"
                    f"first_day_fetch_budget = {FIRST_DAY_BUDGET}\n"
                    f"flagged_host_budget = {FLAGGED_BUDGET}\nmax_urls_per_pattern = 15\n"
                    "host_growth_min_urls = 150\n")
                settings = resource.load()
                seeds = [s.url for s in read_seed_files(settings.seeds_dir)[0]]
                write_parquet_atomic(pa.table({"url": seeds, "host": [host_of(u) for u in seeds], "source": seeds}),
                                     seeds_file(settings.data_root))
            crawl_day(settings, day)
            web = server.web
    return web, settings, resource


def fetches(settings):
    con = duckdb.connect()
    glob = glob_of(settings.data_root, "fetch_log")
    con.execute(f"CREATE VIEW f AS SELECT *, CAST(date AS VARCHAR) AS day FROM read_parquet('{glob}')")
    return con


def test_the_daily_budget_and_every_host_cap_hold_every_day(crawl):
    web, settings, _ = crawl
    con = fetches(settings)
    per_day = dict(con.execute("SELECT day, count(*) FROM f GROUP BY day").fetchall())
    assert sorted(per_day) == DAYS
    first_day_hosts = con.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM f WHERE day = ? GROUP BY host)",
                                  [DAYS[0]]).fetchone()[0]
    assert first_day_hosts <= HOST_BUDGET  # the first day has no plan: its own budget and the host budget
    assert BUDGET < per_day[DAYS[0]] <= FIRST_DAY_BUDGET
    for before, day in zip(DAYS, DAYS[1:]):
        assert 0 < per_day[day] <= BUDGET, (day, per_day)
        caps = {r["host"]: r["cap"] for r in pq.read_table(priority_hosts_file(settings.data_root, before)).to_pylist()}
        for host, n in con.execute("SELECT host, count(*) FROM f WHERE day = ? GROUP BY host", [day]).fetchall():
            assert n <= caps[host], (day, host, n, caps[host])
        # The plan is what was fetched: every planned URL has its row, nothing beyond it.
        plan = pq.read_table(priorities_file(settings.data_root, before)).to_pylist()
        planned = {r["url"] for r in plan if r["planned"]}
        fetched = {u for (u,) in con.execute("SELECT url FROM f WHERE day = ?", [day]).fetchall()}
        assert fetched == planned, day
        check_plan_totals(settings, before, plan)


def check_plan_totals(settings, before: str, plan: list[dict]) -> None:
    """The plan made on `before` for the next day, added up from its Parquet files: each host's
    cap is the per-host budget (the flagged budget for a flagged host; the demo delays are far too
    short for 86,400 / delay to bind), no host is planned or allocated past it, the day's plan
    spends the whole budget, and the frequencies of the pages to hold (refresh and never-fetched
    URLs alike) sum to the budget, or what the caps leave."""
    hosts = pq.read_table(priority_hosts_file(settings.data_root, before)).to_pylist()
    cap = {h["host"]: FLAGGED_BUDGET if h["flag"] else HOST_BUDGET for h in hosts}
    assert {h["host"]: h["cap"] for h in hosts} == cap, before
    planned, allocated, changing = Counter(), Counter(), Counter()
    for r in plan:
        planned[r["host"]] += r["planned"]
        if r["kind"] in ("refresh", "discovery"):
            allocated[r["host"]] += r["frequency"]
            changing[r["host"]] += r["change_rate"] > 0
    assert {h["host"]: h["planned"] for h in hosts} == {h: planned[h] for h in cap}, before
    assert all(planned[h] <= cap[h] and allocated[h] <= cap[h] * (1 + 1e-4) for h in cap), before
    assert sum(planned.values()) == BUDGET, (before, sum(planned.values()))
    to_spend = min(BUDGET, sum(min(cap[h], n) for h, n in changing.items()))
    # (at or a little under: the allocation inverts a tabulated curve, test_priorities.check_budget)
    assert to_spend * 0.99 <= sum(allocated.values()) <= to_spend * (1 + 1e-6), (before, allocated, to_spend)


def test_unchanged_pages_answer_304_and_change_stats_counts_them(crawl):
    _, settings, _ = crawl
    con = fetches(settings)
    not_modified = dict(con.execute("SELECT day, count(*) FILTER (status_class = ?) FROM f GROUP BY day",
                                    [StatusClass.NOT_MODIFIED]).fetchall())
    assert not_modified[DAYS[0]] == 0 and all(not_modified[d] > 0 for d in DAYS[1:]), not_modified
    stats = read_change_stats(settings.data_root, DAYS[-1]).to_pylist()
    assert sum(r["not_modified"] for r in stats) == sum(not_modified.values())
    assert sum(r["bytes_saved"] for r in stats) > 0


def test_daily_changing_pages_come_back_sooner_than_never_changing_ones(crawl):
    web, settings, _ = crawl
    con = fetches(settings)
    visits = dict(con.execute("SELECT url, count(*) FROM f WHERE day > ? AND status IN (200, 304) GROUP BY url",
                              [DAYS[0]]).fetchall())
    plan = pq.read_table(priorities_file(settings.data_root, DAYS[-1])).to_pylist()
    due = {r["url"]: r["next_due"] for r in plan}
    frequency = {r["url"]: r["frequency"] for r in plan}
    daily, never = [], []
    for host in range(WEB["hosts"]):
        for url in web.page_urls(host):
            if url not in due:
                continue  # disallowed by robots.txt, or not linked
            rate = web.page_state(host, urlsplit(url).path).rate
            if rate >= 0.5:
                daily.append(url)
            elif rate == 0:
                never.append(url)
    assert len(daily) >= 3 and len(never) >= 10, (len(daily), len(never))
    mean = lambda urls: sum(visits.get(u, 0) for u in urls) / len(urls)  # noqa: E731
    print(f"\nfetches on days 2-5: daily-changing pages {mean(daily):.2f}, never-changing {mean(never):.2f}")
    assert mean(daily) > mean(never) + 1
    # The last plan revisits daily-changing pages at least half again as often. (A page's
    # first Last-Modified gives it no rate, so four days in, a never-changing page's rate
    # rests on two or three unchanged visits, and with this ample budget it may be due on
    # the plan's day too: next_due is never before it.)
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    assert median([frequency[u] for u in daily]) > 1.5 * median([frequency[u] for u in never])
    never_due = sorted(due[u] for u in never if due[u] is not None)
    daily_due = sorted(due[u] for u in daily)
    assert daily_due[len(daily_due) // 2] <= never_due[len(never_due) // 2] if never_due else True


def test_trap_hosts_get_the_small_budget_from_day_two(crawl):
    web, settings, _ = crawl
    con = fetches(settings)
    flags = {r["host"]: r["flag"] for r in pq.read_table(priority_hosts_file(settings.data_root, DAYS[0])).to_pylist()}
    traps = [t.hostname for t in web.trap_hosts() if flags.get(t.hostname) == HostFlag.TRAP]
    # Session ids are stripped by normalisation: that host is an ordinary site, not a trap.
    assert {t.kind for t in web.trap_hosts() if t.hostname in traps} >= {"calendar", "facets", "deep_paths",
                                                                          "random_links"}
    assert not any(flags.get(h) for h in web.hostnames())  # ordinary hosts keep their budget
    for host in traps:
        per_day = dict(con.execute("SELECT day, count(*) FROM f WHERE host = ? GROUP BY day", [host]).fetchall())
        assert per_day[DAYS[0]] > FLAGGED_BUDGET, (host, per_day)  # day one: the whole per-host budget
        assert all(per_day.get(d, 0) <= FLAGGED_BUDGET for d in DAYS[1:]), (host, per_day)


def test_the_frontier_says_how_many_known_urls_the_plan_left_out(crawl):
    from crawl_assets.pipeline.crawl_history import history_before
    from crawl_assets.pipeline.frontier_step import build_frontier
    from crawl_assets.pipeline.priorities.recrawl_plan import plan_path

    _, settings, _ = crawl
    frontier = build_frontier(settings, history_before(settings.data_root, "2026-11-25"),
                              plan_path(settings.data_root, "2026-11-25"))
    assert 0 < frontier.counts.urls <= BUDGET
    assert frontier.counts.left_out_by_reason[DropReason.NOT_PLANNED] > 0


def test_the_assets_write_the_same_tables_and_tell_a_data_team_what_the_day_did(crawl):
    from dagster import materialize

    from crawl_assets.defs.assets import change_stats as change_stats_asset, recrawl_priorities as priorities_asset

    _, settings, resource = crawl
    day = DAYS[-1]
    before = pq.read_table(priorities_file(settings.data_root, day))
    result = materialize([change_stats_asset, priorities_asset], partition_key=day,
                         resources={"crawl_settings": resource})
    assert result.success
    assert pq.read_table(priorities_file(settings.data_root, day)).equals(before)  # the steps' own tables
    stats = result.asset_materializations_for_node("change_stats")[0].metadata
    plan = result.asset_materializations_for_node("recrawl_priorities")[0].metadata
    visits = stats["visits_of_the_day"].value
    assert 0 < stats["not_modified_of_the_day"].value <= visits
    assert stats["not_modified_share_of_the_day"].value == round(stats["not_modified_of_the_day"].value / visits, 4)
    assert stats["bytes_saved_by_conditional_get_of_the_day"].value > 0
    bands = stats["change_rate_distribution"].value.records
    assert len(bands) == 6 and sum(b.data["urls"] for b in bands) == stats["dagster/row_count"].value
    shares = [plan[k].value for k in ("refresh_share_of_plan", "discovery_share_of_plan", "gone_share_of_plan")]
    assert abs(sum(shares) - 1) < 0.01 and plan["planned"].value <= BUDGET
    flags = {r.data["flag"]: r.data["hosts"] for r in plan["flagged_hosts"].value.records}
    assert flags.get(HostFlag.TRAP, 0) >= 4


def test_sitemap_and_feed_dates_are_recorded_true_and_mark_changes_since_the_last_visit(crawl):
    web, settings, _ = crawl
    root, last = settings.data_root, DAYS[-1]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW e AS SELECT *, CAST(date AS VARCHAR) AS day "
                f"FROM read_parquet('{glob_of(root, 'change_evidence')}')")
    kinds = {k for (k,) in con.execute("SELECT DISTINCT source_kind FROM e WHERE day = ?", [DAYS[0]]).fetchall()}
    assert kinds == {"sitemap", "rss", "atom"}  # hosts 1 and 3 publish feeds (demoweb/ordinary/host_traits.py)
    # Every date is the page's true last content change on the day it was read.
    for day, url, lastmod in con.execute("SELECT day, url, lastmod FROM e").fetchall():
        index = web.host_index(host_of(url))
        if index is None:
            continue  # a trap host's sitemap: no known truth
        state = web.with_day(demo_day(day)).page_state(index, urlsplit(url).path)
        assert abs((lastmod - EPOCH).total_seconds() / 86400 - (state.last_change or 0.0)) < 1e-4, (day, url)
    # change_stats reads them: a page dated after its last visit is due again, and truly changed.
    logs = [str(p) for p in shard_files(root, "fetch_log", through=last)]
    plain = change_stats(logs, last, settings).urls  # every fetch so far, without the dates
    urls = read_change_stats(root, last).to_pylist()
    pending = [r for r in urls if r["pending_change"]]
    assert pending and not any(plain["pending_change"].to_pylist())
    assert sum(r["changes"] for r in urls) >= sum(plain["changes"].to_pylist())
    log = fetches(settings)
    for row in pending:
        index, path = web.host_index(row["host"]), urlsplit(row["url"]).path
        seen = log.execute("SELECT max(day) FROM f WHERE url = ? AND status IN (200, 304)", [row["url"]]).fetchone()[0]
        before = web.with_day(demo_day(seen)).page_state(index, path).versions
        assert web.page_state(index, path).versions > before, row["url"]
