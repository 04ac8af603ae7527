"""URL aliases folded (crawler/url_policy/url_aliases.py): each kind of rule on its own host
only, the same URLs one at a time and over Arrow arrays, and the fetch batch folding a link
before it asks anything else of it."""

from itertools import permutations

import pyarrow as pa
import pytest
from rbloom import Bloom

from crawl_assets.crawler.fetching.admission import Admission
from crawl_assets.crawler.fetching.workbench import FetchTask, Workbench
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences
from crawl_assets.crawler.url_policy.url_aliases import AliasKind, AliasRule, AliasRules

# The rules are built inside each test (`rules()`): mutmut counts a test as reaching
# AliasRules' constructor only if the test itself builds them.
RULE_LIST = [AliasRule("h.test", AliasKind.PARAMETER, "from"),
             AliasRule("docs.test", AliasKind.QUERY, "/api/index.html"),
             AliasRule("d.test", AliasKind.INDEX_PAGE, "")]


def rules() -> AliasRules:
    return AliasRules(RULE_LIST)


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
    assert {u: rules().fold(u, h) for u, h in zip(FOLDS, hosts)} == FOLDS
    assert rules().fold_urls(pa.array(list(FOLDS)), pa.array(hosts)).to_pylist() == list(FOLDS.values())


def both_forms(rule_list: list[AliasRule], urls: list[str]) -> list[str]:
    """The URLs folded one at a time, checked equal to the same folded over arrays."""
    hosts = [url.split("/")[2] for url in urls]
    one_at_a_time = [AliasRules(rule_list).fold(url, host) for url, host in zip(urls, hosts)]
    assert AliasRules(rule_list).fold_urls(pa.array(urls), pa.array(hosts)).to_pylist() == one_at_a_time
    return one_at_a_time


def test_a_hosts_rules_fold_alike_whatever_order_they_come_in():
    # The query goes before the index page: javadoc's frame URL folds to the directory, not to
    # "/api/?..." (what the index page's rule would make of it first).
    rule_list = [AliasRule("docs.test", AliasKind.INDEX_PAGE, ""), AliasRule("docs.test", AliasKind.QUERY, "/api/index.html"),
                 AliasRule("docs.test", AliasKind.PARAMETER, "from"), AliasRule("b.test", AliasKind.INDEX_PAGE, "")]
    urls = ["https://docs.test/api/index.html?from=1&java/util/List.html=", "https://docs.test/api/index.html?from=2",
            "https://docs.test/guide/index.html?from=3&x=1", "https://b.test/index.html?from=1"]
    folded = ["https://docs.test/api/", "https://docs.test/api/", "https://docs.test/guide/?x=1", "https://b.test/?from=1"]
    for order in permutations(rule_list):
        assert both_forms(list(order), urls) == folded, order


@pytest.mark.parametrize("name", ["from", "utm.source", "q[]", "a\\1", "x+y"])
def test_a_parameter_whose_name_holds_regex_characters_is_removed_alone_in_both_forms(name):
    # (fold() once read the escaped "\\1" of such a name as a group; the array form did not)
    urls = [f"https://h.test/p?{name}=3&id=7", f"https://h.test/p?id=7&{name}=3", "https://h.test/p?fromx=3&id=7",
            "https://h.test/p?id=7"]
    assert both_forms([AliasRule("h.test", AliasKind.PARAMETER, name)], urls) == [
        "https://h.test/p?id=7", "https://h.test/p?id=7", "https://h.test/p?fromx=3&id=7", "https://h.test/p?id=7"]


def test_arrays_of_one_url_of_chunks_and_of_unknown_hosts_are_folded_as_one_url_at_a_time():
    folding = AliasRules([AliasRule("a.test", AliasKind.PARAMETER, "x"), AliasRule("h.test", AliasKind.PARAMETER, "from")])
    assert folding.fold_urls(pa.array(["https://h.test/p?from=1"]), pa.array(["h.test"])).to_pylist() == [
        "https://h.test/p"]  # a.test, first of the rules' hosts, has no URL here: h.test's rules still apply
    assert folding.fold_urls(pa.array([], pa.string()), pa.array([], pa.string())).to_pylist() == []
    # a URL whose host is unknown (null) is left as it is
    assert folding.fold_urls(pa.array(["https://h.test/p?from=1", "https://h.test/q?from=1"]),
                             pa.array([None, "h.test"])).to_pylist() == ["https://h.test/p?from=1", "https://h.test/q"]
    # a table's columns (and DuckDB's arguments) come in chunks, cut anywhere: one array comes back
    urls = pa.chunked_array([["https://h.test/p?from=1", "https://o.test/p?from=1"], ["https://a.test/p?x=1&y=2"]])
    hosts = pa.chunked_array([["h.test"], ["o.test", "a.test"]])
    folded = folding.fold_urls(urls, hosts)
    assert isinstance(folded, pa.Array) and folded.to_pylist() == [
        "https://h.test/p", "https://o.test/p?from=1", "https://a.test/p?y=2"]


def test_rules_come_from_the_active_rows_of_a_url_aliases_table():
    table = pa.table({"host": ["h.test", "h.test", "h.test"], "kind": ["parameter", "parameter", "parameter"],
                      "name": ["from", "page", "sort"], "active": [True, False, None]})
    rules = AliasRules.from_table(table)
    # an inactive rule (one dropped since, or never confirmed) and one of unknown state fold nothing
    assert rules.fold("https://h.test/x?from=1&page=2&sort=3", "h.test") == "https://h.test/x?page=2&sort=3"
    assert AliasRules.from_table(table.slice(0, 1)).fold("https://h.test/x?from=1", "h.test") == "https://h.test/x"
    assert not AliasRules.from_table(None) and not AliasRules() and not AliasRules.from_table(table.slice(1))


def test_the_batch_folds_a_link_before_its_seen_check_and_its_traps():
    workbench = Workbench(weights=(4, 2, 1))
    seen = Bloom(100, 0.01)
    seen.add("https://h.test/p/12")
    gate = Admission(workbench, 3, 10, TrapDefences(), lambda host: True, seen, aliases=rules())
    gate.links_found(FetchTask("https://h.test/", "h.test"),
                     ["https://h.test/p/12?from=nav", "https://h.test/p/13?from=nav", "https://h.test/p/13"])
    assert [(link.target, link.is_new) for link in gate.links] == [
        ("https://h.test/p/12", False), ("https://h.test/p/13", True), ("https://h.test/p/13", False)]
    # each page queued once, under its own URL
    assert sorted([t.url for q in workbench.front_queues for t in q] + [
        t.url for s in workbench.hosts.values() for t in s.back_queue]) == ["https://h.test/p/12", "https://h.test/p/13"]
