"""What the priorities step reads of the crawl so far (pipeline/recrawl_inputs.py)."""

from crawl_assets.pipeline.crawl_history import history_through
from crawl_assets.pipeline.recrawl_inputs import known_urls
from crawl_files import settings_for, write_links, write_seeds


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
