"""URL aliases folded (crawler/url_policy/url_aliases.py): each kind of rule on its own host
only, the same URLs one at a time and over Arrow arrays, and the fetch batch folding a link
before it asks anything else of it."""

import pyarrow as pa
from rbloom import Bloom

from crawl_assets.crawler.fetching.admission import Admission
from crawl_assets.crawler.fetching.workbench import FetchTask, Workbench
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences
from crawl_assets.crawler.url_policy.url_aliases import AliasKind, AliasRule, AliasRules

RULES = AliasRules([AliasRule("h.test", AliasKind.PARAMETER, "from"),
                    AliasRule("docs.test", AliasKind.QUERY, "/api/index.html"),
                    AliasRule("d.test", AliasKind.INDEX_PAGE, "")])
FOLDS = {
    "https://h.test/p/12?from=3": "https://h.test/p/12",
    "https://h.test/p/12?from=3&id=7": "https://h.test/p/12?id=7",
    "https://h.test/p/12?a=1&from=3": "https://h.test/p/12?a=1",
    "https://h.test/p/12?a=1&from=3&z=2": "https://h.test/p/12?a=1&z=2",
    "https://h.test/p/12?xfrom=3": "https://h.test/p/12?xfrom=3",  # another parameter
    "https://h.test/p/12": "https://h.test/p/12",
    "https://docs.test/api/index.html?java/util/List.html=": "https://docs.test/api/index.html",
    "https://docs.test/old/api/index.html?a=": "https://docs.test/old/api/index.html?a=",  # another path
    "https://d.test/a/index.html": "https://d.test/a/",
    "https://d.test/index.html?x=1": "https://d.test/?x=1",
    "https://d.test/a/index.htm": "https://d.test/a/index.htm",
    "https://o.test/p/12?from=3": "https://o.test/p/12?from=3",  # a host without rules
    "https://o.test/index.html": "https://o.test/index.html",
}


def test_each_rule_folds_its_hosts_urls_alike_one_at_a_time_and_over_arrays():
    hosts = [u.split("/")[2] for u in FOLDS]
    assert {u: RULES.fold(u, h) for u, h in zip(FOLDS, hosts)} == FOLDS
    assert RULES.fold_urls(pa.array(list(FOLDS)), pa.array(hosts)).to_pylist() == list(FOLDS.values())


def test_rules_come_from_the_active_rows_of_a_url_aliases_table():
    table = pa.table({"host": ["h.test", "h.test"], "kind": ["parameter", "parameter"], "name": ["from", "page"],
                      "active": [True, False]})
    rules = AliasRules.from_table(table)
    assert rules.fold("https://h.test/x?from=1&page=2", "h.test") == "https://h.test/x?page=2"
    assert not AliasRules.from_table(None) and not AliasRules()


def test_the_batch_folds_a_link_before_its_seen_check_and_its_traps():
    workbench = Workbench(weights=(4, 2, 1))
    seen = Bloom(100, 0.01)
    seen.add("https://h.test/p/12")
    gate = Admission(workbench, 3, 10, TrapDefences(), lambda host: True, seen, aliases=RULES)
    gate.links_found(FetchTask("https://h.test/", "h.test"),
                     ["https://h.test/p/12?from=nav", "https://h.test/p/13?from=nav", "https://h.test/p/13"])
    assert [(link.target, link.is_new) for link in gate.links] == [
        ("https://h.test/p/12", False), ("https://h.test/p/13", True), ("https://h.test/p/13", False)]
    # each page queued once, under its own URL
    assert sorted([t.url for q in workbench.front_queues for t in q] + [
        t.url for s in workbench.hosts.values() for t in s.back_queue]) == ["https://h.test/p/12", "https://h.test/p/13"]
