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
    assert known.column_names == ["url", "host", "inlinks"]
    assert known.column("inlinks").to_pylist() == [0, 1, 1, 2]
