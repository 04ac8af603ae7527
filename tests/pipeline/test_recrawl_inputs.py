"""What the priorities step reads of the crawl so far (pipeline/recrawl_inputs.py)."""

import pyarrow as pa

from crawl_assets.pipeline.crawl_history import history_through
from crawl_assets.pipeline.recrawl_inputs import known_urls
from crawl_assets.storage.layout import links_file, url_aliases_file, write_parquet_atomic
from crawl_files import settings_for, shard_for, write_links, write_seeds


def test_the_plan_knows_no_url_the_fetch_batch_would_refuse_as_too_deep(tmp_path):
    settings = settings_for(tmp_path, max_depth=2)
    write_seeds(tmp_path, ["http://a.test/"])
    write_links(tmp_path, "2026-11-27", [("http://a.test/", "http://a.test/d1", 1),
                                         ("http://a.test/d1", "http://a.test/d2", 2),
                                         ("http://a.test/d2", "http://a.test/d3", 3),
                                         ("http://a.test/d2", "http://a.test/later-shallow", 3)])
    # Found again at depth 2 on a later day: its shallowest depth counts.
    write_links(tmp_path, "2026-11-28", [("http://a.test/d1", "http://a.test/later-shallow", 2)])
    known = known_urls(history_through(tmp_path, "2026-11-28"), settings)
    assert known.column("url").to_pylist() == ["http://a.test/", "http://a.test/d1", "http://a.test/d2",
                                               "http://a.test/later-shallow"]
    assert known.column_names == ["url", "host", "inlinks", "leads"]
    assert known.column("inlinks").to_pylist() == [0, 1, 1, 2]


def test_a_demoted_hosts_page_that_pages_on_other_hosts_link_is_known(tmp_path):
    # copies.test was demoted: the batch refused links to its new pages (demoted_host). Its
    # /tag/popular is linked from three pages of other hosts (demoted_host_min_inlinks = 3):
    # the rest of the web points at it, it is known; /tag/rare from two, and /tag/self from
    # three pages of its own host, are not.
    settings = settings_for(tmp_path)
    assert settings.demoted_host_min_inlinks == 3
    write_seeds(tmp_path, ["http://blog.test/", "http://copies.test/"])
    refused = "demoted_host"
    write_links(tmp_path, "2026-11-27", [
        *((f"http://blog.test/post/{i}", "http://copies.test/tag/popular", 1, refused) for i in range(3)),
        *((f"http://blog.test/post/{i}", "http://copies.test/tag/rare", 1, refused) for i in range(2)),
        *((f"http://copies.test/p/{i}", "http://copies.test/tag/self", 1, refused) for i in range(3)),
        ("http://blog.test/", "http://blog.test/post/0", 1)])
    # One more refused link to /tag/popular from a page already counted: still three pages.
    write_links(tmp_path, "2026-11-28", [("http://blog.test/post/0", "http://copies.test/tag/popular", 1, refused)])
    known = known_urls(history_through(tmp_path, "2026-11-28"), settings)
    assert known.column("url").to_pylist() == ["http://blog.test/", "http://blog.test/post/0",
                                               "http://copies.test/", "http://copies.test/tag/popular"]
    assert dict(zip(known["url"].to_pylist(), known["inlinks"].to_pylist()))["http://copies.test/tag/popular"] == 3


def test_a_never_fetched_url_leads_to_what_its_pools_first_fetches_showed_new(tmp_path):
    """leads: the new URLs (not refused) the first fetch of each page of the URL's pool (its
    pattern within its host) showed, over the pool's first fetches plus one; a later fetch's
    new links do not count, nor do a fetched page's own."""
    settings = settings_for(tmp_path)
    a = "http://a.test"
    write_seeds(tmp_path, [f"{a}/", "http://b.test/"])
    write_links(tmp_path, "2026-11-27", [(f"{a}/", f"{a}/list/1", 1), (f"{a}/", f"{a}/list/2", 1),
                                         (f"{a}/", f"{a}/p/1", 1), (f"{a}/", f"{a}/p/2", 1),
                                         ("http://b.test/", "http://b.test/list/5", 1)])
    write_links(tmp_path, "2026-11-28", [
        *((f"{a}/list/1", f"{a}/p/{i}", 2) for i in (10, 11, 12)),  # three new pages
        (f"{a}/list/1", f"{a}/", 2, None, False),  # known already
        (f"{a}/list/1", f"{a}/p/{'x' * 3000}", 2, "url_too_long"),  # refused: leads nowhere
        (f"{a}/p/1", f"{a}/", 2, None, False), (f"{a}/p/1", f"{a}/p/20", 2)])
    write_links(tmp_path, "2026-11-29", [(f"{a}/list/1", f"{a}/p/13", 2)])  # a refetch's new link
    known = known_urls(history_through(tmp_path, "2026-11-29"), settings)
    leads = dict(zip(known["url"].to_pylist(), known["leads"].to_pylist()))
    assert leads == {f"{a}/": 0.0, f"{a}/list/1": 0.0, f"{a}/list/2": 3 / 2, f"{a}/p/1": 0.0,
                     **{f"{a}/p/{i}": 1 / 2 for i in (2, 10, 11, 12, 13, 20)},
                     "http://b.test/": 0.0, "http://b.test/list/5": 0.0}  # (no page of its pool fetched)


def test_a_pools_leads_are_its_pages_first_fetches_summed_over_them_plus_one(tmp_path):
    """Two pages of one pool fetched: their first fetches' new links (1 and 3) summed, over 2 + 1;
    /list/1's refetch showing 5 new links changes nothing."""
    settings = settings_for(tmp_path)
    c = "http://c.test"
    write_seeds(tmp_path, [f"{c}/"])
    write_links(tmp_path, "2026-11-26", [(f"{c}/", f"{c}/list/{i}", 1) for i in (1, 2, 3)])
    write_links(tmp_path, "2026-11-27", [(f"{c}/list/1", f"{c}/a/1", 2)])
    write_links(tmp_path, "2026-11-28", [*((f"{c}/list/1", f"{c}/a/{i}", 2) for i in range(2, 7)),
                                         *((f"{c}/list/2", f"{c}/a/{i}", 2) for i in range(7, 10))])
    known = known_urls(history_through(tmp_path, "2026-11-28"), settings)
    leads = dict(zip(known["url"].to_pylist(), known["leads"].to_pylist()))
    assert leads == {f"{c}/": 0.0, f"{c}/list/1": 0.0, f"{c}/list/2": 0.0, f"{c}/list/3": 4 / 3,
                     **{f"{c}/a/{i}": 0.0 for i in range(1, 10)}}


def test_a_crawl_of_its_seeds_alone_knows_them_without_in_links_or_leads(tmp_path):
    write_seeds(tmp_path, ["http://b.test/", "http://a.test/"])
    known = known_urls(history_through(tmp_path, "2026-11-27"), settings_for(tmp_path))
    assert known.to_pylist() == [{"url": "http://a.test/", "host": "a.test", "inlinks": 0, "leads": 0.0},
                                 {"url": "http://b.test/", "host": "b.test", "inlinks": 0, "leads": 0.0}]


def test_links_written_before_the_seen_filter_show_no_new_url_and_later_links_still_lead(tmp_path):
    """Links files from before the seen filter and the trap defences have no is_new (nor
    dropped_reason): they count as showing no new URL, alone or beside today's files."""
    settings = settings_for(tmp_path)
    a = "http://a.test"
    write_seeds(tmp_path, [f"{a}/"])
    old = [(f"{a}/", f"{a}/list/1"), (f"{a}/", f"{a}/list/2"), (f"{a}/", f"{a}/p/1")]
    write_parquet_atomic(pa.table({"source": [s for s, _ in old], "target": [t for _, t in old],
                                   "target_host": ["a.test"] * 3, "depth": pa.array([1] * 3, pa.int32())}),
                         links_file(tmp_path, "2026-11-26", "s00"))
    known = known_urls(history_through(tmp_path, "2026-11-26"), settings)
    assert known.to_pylist() == [{"url": f"{a}/", "host": "a.test", "inlinks": 0, "leads": 0.0},
                                 *({"url": t, "host": "a.test", "inlinks": 1, "leads": 0.0} for _, t in old)]
    write_links(tmp_path, "2026-11-27", [(f"{a}/list/1", f"{a}/p/2", 2), (f"{a}/list/1", f"{a}/p/3", 2),
                                         (f"{a}/list/1", f"{a}/", 2, None, False)])
    known = known_urls(history_through(tmp_path, "2026-11-27"), settings)
    assert dict(zip(known["url"].to_pylist(), zip(known["inlinks"].to_pylist(), known["leads"].to_pylist()))) == {
        f"{a}/": (1, 0.0), f"{a}/list/1": (1, 0.0), f"{a}/list/2": (1, 2 / 2),
        f"{a}/p/1": (1, 0.0), f"{a}/p/2": (1, 0.0), f"{a}/p/3": (1, 0.0)}


def test_a_shards_known_urls_are_its_hosts_in_scope_with_in_links_from_every_shard_folded(tmp_path):
    """host_scope leaves out.test's pages out; a link's target is folded by the URL aliases
    learnt (a.in.test's sid), its in-links counted for the URL it folds to, from pages of any
    shard; a shard holds its own hosts' URLs, or none."""
    settings = settings_for(tmp_path, host_scope=("*.in.test",))
    a, b = "http://a.in.test", "http://b.in.test"
    assert (shard_for("a.in.test", settings), shard_for("b.in.test", settings)) == ("s05", "s06")
    write_seeds(tmp_path, [f"{a}/", f"{b}/", "http://out.test/"])
    write_links(tmp_path, "2026-11-27", [(f"{a}/", f"{a}/p?sid=1", 1), (f"{b}/", f"{a}/p?sid=2", 1),
                                         (f"{b}/", f"{b}/q", 1), ("http://out.test/", "http://out.test/r", 1),
                                         (f"{a}/", "http://out.test/r", 1)])
    write_parquet_atomic(pa.table({"host": ["a.in.test"], "kind": ["parameter"], "name": ["sid"], "active": [True]}),
                         url_aliases_file(tmp_path, "2026-11-27"))
    history = history_through(tmp_path, "2026-11-27")
    row = {"url": f"{a}/p", "host": "a.in.test", "inlinks": 2, "leads": 0.0}
    assert known_urls(history, settings).to_pylist() == [
        {"url": f"{a}/", "host": "a.in.test", "inlinks": 0, "leads": 0.0}, row,
        {"url": f"{b}/", "host": "b.in.test", "inlinks": 0, "leads": 0.0},
        {"url": f"{b}/q", "host": "b.in.test", "inlinks": 1, "leads": 0.0}]
    assert known_urls(history, settings, shard="s05").to_pylist() == [
        {"url": f"{a}/", "host": "a.in.test", "inlinks": 0, "leads": 0.0}, row]
    assert known_urls(history, settings, shard="s06")["url"].to_pylist() == [f"{b}/", f"{b}/q"]
    none = known_urls(history, settings, shard="s03")
    assert none.num_rows == 0 and none.schema == known_urls(history, settings).schema
