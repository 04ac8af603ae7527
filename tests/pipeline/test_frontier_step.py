"""The frontier step without Dagster, on small Parquet fixtures: budgets, left-out counts by
reason, validators, the shard split, and agreement with a plain-Python statement of the rules."""

import random
from fnmatch import fnmatch
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from crawl_assets.crawler.batches.arrow_schemas import FETCH_LOG_SCHEMA, FRONTIER_SCHEMA
from crawl_assets.crawler.crawl_errors import CrawlInputError
from crawl_assets.crawler.url_policy.sharding import shard_key, shard_of
from crawl_assets.crawler.url_policy.trap_defences import Blocklist, TrapDefences, TrapLimits, query_shape
from crawl_assets.crawler.vocabulary import DropReason
from crawl_assets.pipeline.crawl_history import history_before
from crawl_assets.pipeline.frontier_step import build_frontier, frontiers_of_shards
from crawl_assets.storage.layout import fetch_log_file, write_parquet_atomic
from crawl_files import fetch_row, host_of, settings_for, write_fetch_log, write_links, write_seeds

DAY = "2026-11-29"


def frontier_urls(result):
    return result.table.column("url").to_pylist()


def test_the_host_budget_keeps_the_shallowest_pages_ties_by_url(tmp_path):
    settings = settings_for(tmp_path, max_pages_per_host=4)
    write_seeds(tmp_path, ["http://a.test/"])
    write_links(tmp_path, "2026-11-28", [("http://a.test/", f"http://a.test/p{n}", 1 + n % 3) for n in range(9)])
    result = build_frontier(settings, history_before(tmp_path, DAY))
    # depth 0: the seed; depth 1: p0, p3, p6 (URL order); p1 (depth 2) misses the cut.
    assert sorted(frontier_urls(result)) == ["http://a.test/", "http://a.test/p0", "http://a.test/p3",
                                             "http://a.test/p6"]
    assert result.counts.left_out_by_reason == {DropReason.HOST_BUDGET: 6}
    assert result.counts.urls == 4 and result.counts.hosts == 1


def test_the_first_day_holds_the_daily_budget_or_its_own_seeds_first_hosts_in_turn(tmp_path):
    write_seeds(tmp_path, [f"http://h{h}.test/" for h in range(4)])
    write_links(tmp_path, "2026-11-28", [(f"http://h{h}.test/", f"http://h{h}.test/p{n}", 1)
                                         for h in range(4) for n in range(5)])  # 24 URLs known, no plan
    result = build_frontier(settings_for(tmp_path, daily_fetch_budget=10), history_before(tmp_path, DAY))
    urls = frontier_urls(result)
    assert result.counts.urls == len(urls) == 10
    assert {u for u in urls if u.endswith("/")} == {f"http://h{h}.test/" for h in range(4)}
    # Then each host's first page, then some hosts' second: no host takes the rest alone.
    assert sorted(u for u in urls if not u.endswith("/")) == sorted(
        [f"http://h{h}.test/p0" for h in range(4)] + ["http://h0.test/p1", "http://h1.test/p1"])
    assert result.counts.left_out_by_reason == {DropReason.DAY_BUDGET: 14}

    own = build_frontier(settings_for(tmp_path, daily_fetch_budget=10, first_day_fetch_budget=17),
                         history_before(tmp_path, DAY))
    assert own.counts.urls == 17 and own.counts.left_out_by_reason == {DropReason.DAY_BUDGET: 7}


def test_the_pattern_budget_caps_one_query_shape_and_spares_the_host_budget(tmp_path):
    settings = settings_for(tmp_path, max_pages_per_host=8, max_urls_per_pattern=3)
    write_seeds(tmp_path, ["http://cal.test/"])
    links = [("http://cal.test/", f"http://cal.test/calendar?month={m}", 1) for m in range(10, 20)]
    links += [("http://cal.test/", f"http://cal.test/p/{n}.html", 2) for n in range(10)]
    write_links(tmp_path, "2026-11-28", links)
    result = build_frontier(settings, history_before(tmp_path, DAY))
    urls = frontier_urls(result)
    assert sorted(u for u in urls if "calendar" in u) == [
        f"http://cal.test/calendar?month={m}" for m in (10, 11, 12)]
    # Paths without a query are an ordinary site: only the host budget (8) limits them, and
    # the seven calendar URLs over the pattern budget did not use up any of it.
    assert sum("/p/" in u for u in urls) == 8 - 1 - 3
    assert result.counts.left_out_by_reason == {DropReason.PATTERN_BUDGET: 7, DropReason.HOST_BUDGET: 6}


def test_left_out_urls_are_counted_once_by_reason(tmp_path):
    settings = settings_for(tmp_path, host_scope=("*.test",), max_url_length=60, max_query_params=2)
    (tmp_path / "blocklist.txt").write_text("host bad.test\nurl */private/*\n")
    write_seeds(tmp_path, ["http://a.test/", "http://bad.test/", "http://elsewhere.org/"])
    write_links(tmp_path, "2026-11-27", [
        ("http://a.test/", "http://a.test/" + "x" * 60, 1),
        ("http://a.test/", "http://a.test/q?a=1&b=2&c=3", 1),
        ("http://a.test/", "http://a.test/a/a/a/a/", 1),
        ("http://a.test/", "http://a.test/private/1", 1),
        ("http://a.test/", "http://a.test/refused", 1, DropReason.DEPTH),  # refused when found: not known
        ("http://a.test/", "http://elsewhere.org/page", 1),
    ])
    # The same URLs found again on a later day, deeper: still one URL each.
    write_links(tmp_path, "2026-11-28", [("http://a.test/x", "http://a.test/private/1", 3),
                                         ("http://a.test/x", "http://a.test/kept", 2)], shard="s03")
    result = build_frontier(settings, history_before(tmp_path, DAY))
    assert sorted(frontier_urls(result)) == ["http://a.test/", "http://a.test/kept"]
    assert result.counts.left_out_by_reason == {
        DropReason.URL_TOO_LONG: 1, DropReason.TOO_MANY_QUERY_PARAMS: 1,
        DropReason.REPEATED_PATH_SEGMENTS: 1, DropReason.BLOCKLIST_URL: 1, DropReason.BLOCKLIST_HOST: 1,
        DropReason.OUT_OF_SCOPE: 2}
    assert result.counts.left_out == 7


def test_links_of_the_day_itself_and_later_are_not_read(tmp_path):
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://a.test/"])
    write_links(tmp_path, DAY, [("http://a.test/", "http://a.test/today", 1)])
    write_links(tmp_path, "2026-11-30", [("http://a.test/", "http://a.test/tomorrow", 1)])
    assert frontier_urls(build_frontier(settings, history_before(tmp_path, DAY))) == ["http://a.test/"]


def test_validators_come_from_the_latest_answer_before_the_day(tmp_path):
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://a.test/", "http://a.test/gone", "http://a.test/new"])
    write_fetch_log(tmp_path, "2026-11-27", [
        fetch_row("http://a.test/", "2026-11-27T10:00:00", etag='"v1"', last_modified="Mon, 23 Nov 2026"),
        fetch_row("http://a.test/gone", "2026-11-27T10:00:00", etag='"g1"')])
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://a.test/", "2026-11-28T10:00:00", status=304, status_class="not_modified",
                  etag='"v2"'),
        fetch_row("http://a.test/gone", "2026-11-28T10:00:00", status=404, status_class="http_4xx",
                  etag='"404"')])
    write_fetch_log(tmp_path, DAY, [fetch_row("http://a.test/new", "2026-11-29T01:00:00", etag='"today"')])
    rows = {r["url"]: r for r in build_frontier(settings, history_before(tmp_path, DAY)).table.to_pylist()}
    assert rows["http://a.test/"]["etag"] == '"v2"'  # the 304 is the latest answer
    # The 304 carried no Last-Modified: the one of the unchanged version still holds.
    assert rows["http://a.test/"]["last_modified"] == "Mon, 23 Nov 2026"
    assert rows["http://a.test/"]["last_captured_at"] == datetime(2026, 11, 27, 10, tzinfo=timezone.utc)
    assert rows["http://a.test/gone"]["etag"] == '"g1"'  # a 404 is no version of the page
    assert rows["http://a.test/new"]["etag"] is None  # today's own fetch log is not read


def test_a_page_last_rendered_is_asked_for_without_validators(tmp_path):
    """A rendered page's content is what its scripts load: a 304 for its shell would leave the
    browser nothing to run, so its next fetch is unconditional; the capture it may revisit stays."""
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://spa.test/", "http://spa.test/plain", "http://spa.test/once"])
    write_fetch_log(tmp_path, "2026-11-27", [
        fetch_row("http://spa.test/once", "2026-11-27T10:00:00", etag='"o1"', rendered=True)])
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://spa.test/", "2026-11-28T10:00:00", etag='"s1"', last_modified="Mon, 23 Nov 2026",
                  payload_digest="sha1:SHELL", rendered=True),
        fetch_row("http://spa.test/plain", "2026-11-28T10:00:00", etag='"p1"', rendered=False),
        fetch_row("http://spa.test/once", "2026-11-28T10:00:00", etag='"o2"', rendered=False)])
    rows = {r["url"]: r for r in build_frontier(settings, history_before(tmp_path, DAY)).table.to_pylist()}
    shell = rows["http://spa.test/"]
    assert (shell["etag"], shell["last_modified"]) == (None, None)
    assert shell["last_payload_digest"] == "sha1:SHELL"
    assert shell["last_captured_at"] == datetime(2026, 11, 28, 10, tzinfo=timezone.utc)
    assert rows["http://spa.test/plain"]["etag"] == '"p1"'
    assert rows["http://spa.test/once"]["etag"] == '"o2"'  # rendered before, not in its latest answer


def test_priority_grows_with_depth_up_to_the_last_front_queue(tmp_path):
    settings = settings_for(tmp_path, priority_weights=(4.0, 2.0, 1.0))
    write_seeds(tmp_path, ["http://a.test/"])
    write_links(tmp_path, "2026-11-28", [("http://a.test/", f"http://a.test/d{d}", d) for d in range(1, 5)])
    rows = build_frontier(settings, history_before(tmp_path, DAY)).table.to_pylist()
    assert {r["url"]: r["priority"] for r in rows} == {
        "http://a.test/": 1, "http://a.test/d1": 2, "http://a.test/d2": 3, "http://a.test/d3": 3,
        "http://a.test/d4": 3}


def test_each_shard_gets_its_hosts_and_every_shard_a_file(tmp_path):
    settings = settings_for(tmp_path, shard_count=4)
    hosts = [f"h{i}.test" for i in range(12)]
    write_seeds(tmp_path, [f"http://{h}/" for h in hosts])
    write_links(tmp_path, "2026-11-28", [(f"http://{h}/", f"http://{h}/p{n}", 1) for h in hosts for n in range(3)])
    result = build_frontier(settings, history_before(tmp_path, DAY))
    parts = dict(result.shard_tables())
    assert list(parts) == ["s00", "s01", "s02", "s03"]
    for shard, rows in parts.items():
        assert rows.schema == FRONTIER_SCHEMA
        assert {shard_key(shard_of(h, 4)) for h in rows.column("host").to_pylist()} <= {shard}
        assert rows.num_rows == result.counts.urls_per_shard[shard] == 4 * sum(
            shard_key(shard_of(h, 4)) == shard for h in hosts)
    assert sum(p.num_rows for p in parts.values()) == result.counts.urls == 48


def test_an_empty_shard_gets_an_empty_file(tmp_path):
    settings = settings_for(tmp_path, shard_count=8)
    write_seeds(tmp_path, ["http://a.test/"])
    parts = dict(build_frontier(settings, history_before(tmp_path, DAY)).shard_tables())
    assert len(parts) == 8 and sum(p.num_rows for p in parts.values()) == 1
    assert all(p.schema == FRONTIER_SCHEMA for p in parts.values())


def test_without_seeds_the_error_says_what_to_materialise(tmp_path):
    with pytest.raises(CrawlInputError, match="materialise `seeds` first"):
        history_before(tmp_path, DAY)


# -- agreement with the rules stated in plain Python ------------------------------------------


def reference_frontier(settings, seeds, links):
    """The frontier's rules, one URL at a time: what the SQL must agree with."""
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))
    depth = {}
    for url, d in [(u, 0) for u in seeds] + [(t, d) for _, t, d, reason in links if reason is None]:
        depth[url] = min(depth.get(url, d), d)
    left_out, per_pattern, per_host, kept = {}, {}, {}, []
    for url in sorted(depth, key=lambda u: (depth[u], u)):
        host = host_of(url)
        if not any(fnmatch(host, p) for p in settings.host_scope):
            reason = DropReason.OUT_OF_SCOPE
        else:
            reason = traps.intrinsic_reason(url, host)
        if reason is None and depth[url] > settings.max_depth:
            reason = DropReason.DEPTH
        pattern = query_shape(url)
        if reason is None and pattern is not None:
            per_pattern[host, pattern] = per_pattern.get((host, pattern), 0) + 1
            if per_pattern[host, pattern] > settings.max_urls_per_pattern:
                reason = DropReason.PATTERN_BUDGET
        if reason is None:
            per_host[host] = per_host.get(host, 0) + 1
            if per_host[host] > settings.max_pages_per_host:
                reason = DropReason.HOST_BUDGET
        if reason is None:
            kept.append((url, host, depth[url]))
        else:
            left_out[reason] = left_out.get(reason, 0) + 1
    return sorted(kept), left_out


def random_link(rng, hosts, *, repeats_below, private_below, long_below, pages) -> tuple:
    """(source, target, depth, dropped_reason) of a random link from a host's home page: a
    calendar (30 %), a repeated-path trap, a blocklisted URL, an over-long URL (each up to
    its share's upper bound) or an ordinary page; one in twenty refused for its depth."""
    h, kind = rng.choice(hosts), rng.random()
    target = (f"http://{h}/cal?m={rng.randint(1, 30)}" if kind < 0.3 else
              f"http://{h}/a/a/a/a/{rng.randint(1, 9)}" if kind < repeats_below else
              f"http://{h}/private/{rng.randint(1, 9)}" if kind < private_below else
              f"http://{h}/" + "x" * rng.randint(50, 90) if kind < long_below else
              f"http://{h}/p/{rng.randint(1, pages)}")
    return (f"http://{h}/", target, rng.randint(1, 5), DropReason.DEPTH if rng.random() < 0.05 else None)


def test_the_sql_agrees_with_the_rules_stated_in_python(tmp_path):
    rng = random.Random(7)
    settings = settings_for(tmp_path, max_pages_per_host=12, max_urls_per_pattern=4, max_url_length=70,
                            host_scope=("*.test",), max_depth=4)
    (tmp_path / "blocklist.txt").write_text("host h3.test\nurl */private/*\n")
    hosts = [f"h{i}.test" for i in range(20)] + ["other.org"]
    seeds = [f"http://{h}/" for h in hosts]
    write_seeds(tmp_path, seeds)
    every_link = []
    for day, shard in (("2026-11-27", "s01"), ("2026-11-28", "s02")):
        links = [random_link(rng, hosts, repeats_below=0.4, private_below=0.45, long_below=0.5, pages=40)
                 for _ in range(800)]
        write_links(tmp_path, day, links, shard=shard)
        every_link += links
    result = build_frontier(settings, history_before(tmp_path, DAY))
    kept, left_out = reference_frontier(settings, seeds, every_link)
    assert sorted((r["url"], r["host"], r["depth"]) for r in result.table.to_pylist()) == kept
    assert result.counts.left_out_by_reason == left_out
    assert len(left_out) == 8 and len(kept) > 100  # the fixture exercises every rule


def test_shards_past_s99_keep_their_order(tmp_path):
    # "s100" sorts before "s11" as text: the split follows shard numbers, not key strings.
    settings = settings_for(tmp_path, shard_count=120)
    write_seeds(tmp_path, [f"http://h{i}.test/" for i in range(400)])
    parts = list(build_frontier(settings, history_before(tmp_path, DAY)).shard_tables())
    assert [shard for shard, _ in parts] == settings.shard_keys()
    assert all({shard_key(shard_of(h, 120)) for h in rows.column("host").to_pylist()} <= {shard}
               for shard, rows in parts)
    assert sum(rows.num_rows for _, rows in parts) == 400


def test_with_a_plan_the_frontier_holds_the_planned_urls_in_plan_order_at_their_levels(tmp_path):
    import pyarrow as pa

    settings = settings_for(tmp_path, max_pages_per_host=3)
    write_seeds(tmp_path, ["http://a.test/", "http://b.test/"])
    write_links(tmp_path, "2026-11-28", [("http://a.test/", f"http://a.test/p{n}", 1) for n in range(6)])
    # Planned yesterday for today: p4 first, then p1; the seed of a.test and p0 not due; p2, p3
    # and p5 over the budget. b.test's seed was added after the plan was made.
    plan = pa.table({"url": ["http://a.test/", "http://a.test/p0", "http://a.test/p1", "http://a.test/p2",
                             "http://a.test/p3", "http://a.test/p4", "http://a.test/p5"],
                     "planned": [False, False, True, False, False, True, False],
                     "plan_rank": pa.array([None, None, 2, None, None, 1, None], pa.int64()),
                     "level": pa.array([5, 5, 3, 5, 5, 1, 5], pa.int32())})
    result = build_frontier(settings, history_before(tmp_path, DAY), plan)
    rows = [(r["url"], r["priority"]) for r in result.table.to_pylist()]
    assert [u for u, _ in rows if "a.test" in u] == ["http://a.test/p4", "http://a.test/p1"]  # plan order
    assert dict(rows) == {"http://a.test/p4": 1, "http://a.test/p1": 3, "http://b.test/": 1}
    assert result.counts.left_out_by_reason == {DropReason.NOT_PLANNED: 5}
    # Without the plan the same history gives every URL within the host budget, shallowest first.
    assert sorted(frontier_urls(build_frontier(settings, history_before(tmp_path, DAY)))) == [
        "http://a.test/", "http://a.test/p0", "http://a.test/p1", "http://b.test/"]


def test_a_planned_url_deeper_than_max_depth_is_left_out_as_too_deep(tmp_path):
    # The plan of an older version (or one made under a larger max_depth) holds a URL the
    # fetch batch would refuse: the frontier leaves it out and counts it, never hands it on.
    import pyarrow as pa

    settings = settings_for(tmp_path, max_depth=2)
    write_seeds(tmp_path, ["http://a.test/"])
    write_links(tmp_path, "2026-11-28", [("http://a.test/", "http://a.test/d1", 1),
                                         ("http://a.test/d1", "http://a.test/d2", 2),
                                         ("http://a.test/d2", "http://a.test/d3", 3)])
    plan = pa.table({"url": ["http://a.test/", "http://a.test/d1", "http://a.test/d2", "http://a.test/d3"],
                     "planned": [True] * 4, "plan_rank": pa.array([4, 3, 2, 1], pa.int64()),
                     "level": pa.array([1] * 4, pa.int32())})
    for with_plan in (plan, None):
        result = build_frontier(settings, history_before(tmp_path, DAY), with_plan)
        assert sorted(frontier_urls(result)) == ["http://a.test/", "http://a.test/d1", "http://a.test/d2"]
        assert result.counts.left_out_by_reason == {DropReason.DEPTH: 1}


@pytest.mark.parametrize("blocklist", ["", "host h2.test\nurl */cal/*\n"])
def test_the_url_rules_the_sql_calls_agree_with_trap_defences_url_by_url(tmp_path, blocklist):
    # The frontier's SQL calls the trap rules as DuckDB functions over Arrow batches of 2048
    # rows, some URLs out of scope (a CASE hands the functions a part of each batch).
    import duckdb
    import pyarrow as pa

    from crawl_assets.pipeline.frontier_step import register_url_rules

    rng = random.Random(11)
    (tmp_path / "blocklist.txt").write_text(blocklist)
    settings = settings_for(tmp_path, max_url_length=60, max_query_params=3)
    parts = ["a", "b", "cal", "2031", "x9y", "é", "%C3%A9", "&"]
    urls = ["http://h.test/", "http://h.test/?", "http://h.test/p?", "http://h.test/p??a=1", "http://h.test/p?=1",
            "http://h.test/p?a&b&c&d", "http://h.test/p?a=1&&b", "http://h.test/" + "x" * 60]
    for _ in range(5000):
        path = "/".join(rng.choice(parts) for _ in range(rng.randint(0, 7)))
        query = "&".join(f"{rng.choice(parts)}={rng.choice(parts)}{rng.randint(0, 99)}"
                         for _ in range(rng.randint(0, 5)))
        urls.append(f"http://h{rng.randint(0, 3)}.test/{path}" + (f"?{query}" if query or rng.random() < 0.1 else ""))
    con = duckdb.connect()
    register_url_rules(con, settings)
    con.register("u", pa.table({"i": range(len(urls)), "url": urls, "host": [host_of(u) for u in urls]}))
    rows = con.execute("SELECT url, host, verdicts.trap, verdicts.query_shape FROM "
                       "(SELECT *, CASE WHEN i % 7 > 0 THEN url_rules(url, host) END AS verdicts FROM u) ORDER BY i").fetchall()
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))
    assert [(u, r, p) for u, h, r, p in rows] == [
        (u, traps.intrinsic_reason(u, h), query_shape(u)) if i % 7 else (u, None, None)
        for i, u in enumerate(urls) for h in [host_of(u)]]
    assert sum(r is not None for _, _, r, _ in rows) > 100 and sum(p is not None for *_, p in rows) > 1000


def reference_frontier_with_plan(settings, seeds, links, plan):
    """The rules with yesterday's plan, one URL at a time. plan: url -> (planned, plan_rank,
    level); a known URL missing from it is a seed added since, taken as without a plan."""
    traps = TrapDefences(TrapLimits.from_settings(settings), Blocklist.read(settings.blocklist_file))
    depth = {}
    for url, d in [(u, 0) for u in seeds] + [(t, d) for _, t, d, reason in links if reason is None]:
        depth[url] = min(depth.get(url, d), d)
    planned = {url: plan[url][0] if url in plan else None for url in depth}
    rank = {url: plan[url][1] if url in plan else None for url in depth}

    def plan_order(url):  # plan rank (none last), shallowest, URL
        return (rank[url] is None, rank[url] or 0, depth[url], url)

    reason = {}
    for url in depth:
        host = host_of(url)
        reason[url] = (DropReason.OUT_OF_SCOPE if not any(fnmatch(host, p) for p in settings.host_scope)
                       else traps.intrinsic_reason(url, host))
        if reason[url] is None and depth[url] > settings.max_depth:
            reason[url] = DropReason.DEPTH
    per_pattern = {}
    for url in sorted((u for u in depth if reason[u] is None and query_shape(u) is not None), key=plan_order):
        key = host_of(url), query_shape(url)
        per_pattern[key] = per_pattern.get(key, 0) + 1
        if per_pattern[key] > settings.max_urls_per_pattern:
            reason[url] = DropReason.PATTERN_BUDGET
    for url in depth:
        if reason[url] is None and planned[url] is False:
            reason[url] = DropReason.NOT_PLANNED
    per_host = {}
    for url in sorted((u for u in depth if reason[u] is None), key=plan_order):
        per_host[host_of(url)] = per_host.get(host_of(url), 0) + 1
        if per_host[host_of(url)] > settings.max_pages_per_host:
            reason[url] = DropReason.HOST_BUDGET
    left_out = {}
    for r in reason.values():
        if r is not None:
            left_out[r] = left_out.get(r, 0) + 1
    levels = len(settings.priority_weights)
    kept = [(url, host_of(url), depth[url], plan[url][2] if url in plan else min(depth[url] + 1, levels))
            for url in depth if reason[url] is None]
    # In the frontier's order: by shard, the plan's rank (none last), host, depth, URL.
    kept.sort(key=lambda k: (shard_of(k[1], settings.shard_count), rank[k[0]] is None, rank[k[0]] or 0,
                             k[1], k[2], k[0]))
    return kept, left_out


def test_with_a_plan_the_sql_agrees_with_the_rules_stated_in_python(tmp_path):
    # Every rule at once over a plan: scope and traps first, then each query shape's budget
    # (the plan's URLs first), the URLs the plan left out, and the host budget in plan order;
    # seeds the plan has not seen are kept as without a plan.
    import pyarrow as pa

    rng = random.Random(19)
    settings = settings_for(tmp_path, max_pages_per_host=10, max_urls_per_pattern=4, max_url_length=70,
                            host_scope=("*.test",), shard_count=3, max_depth=4)
    (tmp_path / "blocklist.txt").write_text("url */private/*\n")
    hosts = [f"h{i}.test" for i in range(15)] + ["other.org"]
    seeds = [f"http://{h}/" for h in hosts]
    write_seeds(tmp_path, seeds)
    links = [random_link(rng, hosts, repeats_below=0.35, private_below=0.4, long_below=0.4, pages=60)
             for _ in range(1500)]
    write_links(tmp_path, "2026-11-28", links, shard="s01")
    known = sorted({u for u in seeds} | {t for _, t, _, r in links if r is None})
    in_plan = [u for u in known if u not in seeds[:3]]  # three seeds added after the plan was made
    chosen = [u for u in in_plan if rng.random() < 0.4]
    ranks = {u: n + 1 for n, u in enumerate(rng.sample(chosen, len(chosen)))}
    plan = {u: (u in ranks, ranks.get(u), rng.randint(1, 5)) for u in in_plan}
    table = pa.table({"url": list(plan), "planned": [p[0] for p in plan.values()],
                      "plan_rank": pa.array([p[1] for p in plan.values()], pa.int64()),
                      "level": pa.array([p[2] for p in plan.values()], pa.int32())})
    result = build_frontier(settings, history_before(tmp_path, DAY), table)
    kept, left_out = reference_frontier_with_plan(settings, seeds, links, plan)
    assert [(r["url"], r["host"], r["depth"], r["priority"]) for r in result.table.to_pylist()] == kept
    assert result.counts.left_out_by_reason == left_out
    assert set(left_out) == {DropReason.OUT_OF_SCOPE, DropReason.REPEATED_PATH_SEGMENTS, DropReason.BLOCKLIST_URL,
                             DropReason.PATTERN_BUDGET, DropReason.NOT_PLANNED, DropReason.HOST_BUDGET,
                             DropReason.DEPTH}
    assert len(kept) > 50


def test_a_page_rendered_after_an_upgrade_is_asked_for_without_validators(tmp_path):
    """A data root crawled before the render tier: its older fetch logs have no rendered column.
    The page a newer log records as rendered is asked for without validators all the same, and
    the old log's plain pages keep theirs."""
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://spa.test/", "http://spa.test/plain"])
    old = [fetch_row(u, "2026-11-27T10:00:00", etag='"old"') for u in ("http://spa.test/", "http://spa.test/plain")]
    before_render_tier = pa.Table.from_pylist(old, schema=FETCH_LOG_SCHEMA).drop_columns(["rendered"])
    write_parquet_atomic(before_render_tier, fetch_log_file(tmp_path, "2026-11-27", "s00"))
    write_fetch_log(tmp_path, "2026-11-28", [
        fetch_row("http://spa.test/", "2026-11-28T10:00:00", etag='"s1"', rendered=True)])
    rows = {r["url"]: r for r in build_frontier(settings, history_before(tmp_path, DAY)).table.to_pylist()}
    assert (rows["http://spa.test/"]["etag"], rows["http://spa.test/"]["last_modified"]) == (None, None)
    assert rows["http://spa.test/plain"]["etag"] == '"old"'


def test_the_first_days_cut_is_crawl_wide_when_the_frontier_is_built_shard_by_shard(tmp_path):
    write_seeds(tmp_path, [f"http://h{h}.test/" for h in range(4)])
    write_links(tmp_path, "2026-11-28", [(f"http://h{h}.test/", f"http://h{h}.test/p{n}", 1)
                                         for h in range(4) for n in range(5)])
    settings = settings_for(tmp_path, daily_fetch_budget=10, shard_count=16)  # 4 hosts: most shards empty
    history = history_before(tmp_path, DAY)
    whole = build_frontier(settings, history)
    shards = frontiers_of_shards(settings, history, None, settings.shard_keys())
    assert pa.concat_tables([part.table for part in shards]).equals(whole.table)
    assert sum(part.counts.urls for part in shards) == whole.counts.urls == 10  # not 10 a shard
    assert sum(part.counts.left_out_by_reason.get(DropReason.DAY_BUDGET, 0) for part in shards) == 14
    assert sum(part.counts.urls == 0 for part in shards) >= 12
