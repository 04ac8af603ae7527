"""URL aliases learnt per host from the crawl's own fetches (pipeline/alias_rules/alias_learning.py): a
query parameter that changes nothing is learnt from pairs of fetched URLs with the same
content, folds the URLs known later (the priorities step's and the frontier's), and is
dropped when a fetch contradicts it; javadoc's frame links fold to the frame page."""

from crawl_assets.pipeline.crawl_history import history_before, history_through
from crawl_assets.pipeline.frontier_step import build_frontier
from crawl_assets.pipeline.recrawl_inputs import known_urls
from crawl_assets.pipeline.alias_rules.alias_learning import learn_url_aliases, previous_aliases
from crawl_assets.storage.layout import shard_files, url_aliases_file, write_parquet_atomic
from crawl_files import fetch_row, settings_for, write_fetch_log, write_links, write_seeds

DAY1, DAY2, DAY3 = "2026-11-27", "2026-11-28", "2026-11-29"


def learn(root, day):
    rules = learn_url_aliases([str(p) for p in shard_files(root, "fetch_log", through=day)], day,
                              previous_aliases(root, day))
    write_parquet_atomic(rules, url_aliases_file(root, day))
    return {(r["host"], r["kind"], r["name"]): r for r in rules.to_pylist()}


def test_a_parameter_that_changes_nothing_folds_later_urls_until_a_fetch_contradicts_it(tmp_path):
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://h.test/"])
    # Day 1: /news and /about answer the same with and without ?ref= (two pages, three pairs).
    write_fetch_log(tmp_path, DAY1, [
        fetch_row("http://h.test/", f"{DAY1}T08:00:00", change_digest="home"),
        fetch_row("http://h.test/news", f"{DAY1}T09:00:00", change_digest="news-1"),
        fetch_row("http://h.test/news?ref=top", f"{DAY1}T09:10:00", change_digest="news-1"),
        fetch_row("http://h.test/news?ref=side", f"{DAY1}T09:20:00", change_digest="news-1"),
        fetch_row("http://h.test/about", f"{DAY1}T10:00:00", change_digest="about"),
        fetch_row("http://h.test/about?ref=top", f"{DAY1}T10:10:00", change_digest="about"),
        # ?page= changes the page: no rule (and a contradiction for it on its own)
        fetch_row("http://h.test/list?page=1", f"{DAY1}T11:00:00", change_digest="list-1"),
        fetch_row("http://h.test/list?page=2", f"{DAY1}T11:10:00", change_digest="list-2"),
    ])
    write_links(tmp_path, DAY1, [("http://h.test/", "http://h.test/news?ref=foot", 1),
                                 ("http://h.test/", "http://h.test/about?ref=side", 1),
                                 ("http://h.test/", "http://h.test/jobs?ref=top", 1),
                                 ("http://h.test/", "http://h.test/list?page=3", 1)])
    rules = learn(tmp_path, DAY1)
    ref = rules[("h.test", "parameter", "ref")]
    assert ref["active"] and ref["agreeing_pairs"] == 3 and ref["classes"] == 2
    assert str(ref["learnt_on"]) == DAY1 and ref["dropped_on"] is None
    assert (ref["example"], ref["folds_to"]) == ("http://h.test/about?ref=top", "http://h.test/about")
    assert ("h.test", "parameter", "page") not in rules  # its class disagreed: no evidence, no row
    folded = ["http://h.test/", "http://h.test/about", "http://h.test/jobs", "http://h.test/list?page=3",
              "http://h.test/news"]
    # The URLs known after day 1, as the priorities step of day 1 and the frontier of day 2 read them.
    assert known_urls(history_through(tmp_path, DAY1), settings)["url"].to_pylist() == folded
    assert sorted(build_frontier(settings, history_before(tmp_path, DAY2)).table["url"].to_pylist()) == folded

    # Day 2: /news answers one thing under ?ref=top and another without, the same morning,
    # while /team agrees under both: the agreeing evidence alone (/about and /team, two pairs
    # of two contents) would keep the rule; the contradiction drops it.
    write_fetch_log(tmp_path, DAY2, [
        fetch_row("http://h.test/news", f"{DAY2}T09:00:00", change_digest="news-2"),
        fetch_row("http://h.test/news?ref=top", f"{DAY2}T09:05:00", change_digest="news-top"),
        fetch_row("http://h.test/team", f"{DAY2}T10:00:00", change_digest="team"),
        fetch_row("http://h.test/team?ref=top", f"{DAY2}T10:05:00", change_digest="team")])
    rules = learn(tmp_path, DAY2)
    ref = rules[("h.test", "parameter", "ref")]
    assert (ref["agreeing_pairs"], ref["classes"]) == (2, 2)
    assert not ref["active"] and str(ref["dropped_on"]) == DAY2 and str(ref["contradicted_on"]) == DAY2
    assert str(ref["learnt_on"]) == DAY1
    unfolded = ["http://h.test/", "http://h.test/about?ref=side", "http://h.test/jobs?ref=top",
                "http://h.test/list?page=3", "http://h.test/news?ref=foot"]
    assert known_urls(history_through(tmp_path, DAY2), settings)["url"].to_pylist() == unfolded
    assert sorted(build_frontier(settings, history_before(tmp_path, DAY3)).table["url"].to_pylist()) == unfolded
    # Dropped for good: more agreeing pairs later do not bring it back.
    write_fetch_log(tmp_path, DAY3, [
        fetch_row("http://h.test/jobs", f"{DAY3}T09:00:00", change_digest="jobs"),
        fetch_row("http://h.test/jobs?ref=top", f"{DAY3}T09:05:00", change_digest="jobs")])
    assert not learn(tmp_path, DAY3)[("h.test", "parameter", "ref")]["active"]


def test_javadoc_frame_links_fold_to_the_frame_page(tmp_path):
    settings = settings_for(tmp_path)
    write_seeds(tmp_path, ["http://docs.test/api/index.html"])
    frames = [f"http://docs.test/api/index.html?java/util/{c}.html=" for c in ("List", "Map", "Set")]
    write_fetch_log(tmp_path, DAY1, [
        fetch_row("http://docs.test/api/index.html", f"{DAY1}T08:00:00", change_digest="frameset"),
        *(fetch_row(u, f"{DAY1}T08:{10 + i}:00", change_digest="frameset") for i, u in enumerate(frames))])
    write_links(tmp_path, DAY1, [(f"http://docs.test/api/java/util/{c}.html",
                                  f"http://docs.test/api/index.html?java/util/{c}.html=", 2)
                                 for c in ("Deque", "Queue", "Stack")])
    rules = learn(tmp_path, DAY1)
    query = rules[("docs.test", "query", "/api/index.html")]
    assert query["active"] and query["agreeing_pairs"] == 3 and query["folds_to"] == "http://docs.test/api/index.html"
    # Each frame link's bare key is a parameter of one class whose pages are all the frameset:
    # one page under many URLs, not two pages: no parameter rule.
    assert not any(r["active"] for (_, kind, _), r in rules.items() if kind == "parameter")
    known = known_urls(history_through(tmp_path, DAY1), settings)
    assert known["url"].to_pylist() == ["http://docs.test/api/index.html"]
    assert known["inlinks"].to_pylist() == [3]  # the three pages linking its aliases
