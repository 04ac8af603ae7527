"""Which URLs join the batch and which link rows it reports (no network)."""

from rbloom import Bloom

from crawl_assets.crawler.fetching.admission import Admission, Link
from crawl_assets.crawler.fetching.workbench import FetchTask, Workbench
from crawl_assets.crawler.url_policy.https_hosts import HttpsHosts
from crawl_assets.crawler.url_policy.sharding import shard_of
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences, TrapLimits
from crawl_assets.crawler.url_policy.url_aliases import AliasKind, AliasRule, AliasRules
from crawl_assets.crawler.url_policy.url_bloom import ShardSeenFilter
from crawl_assets.crawler.url_policy.urls import resolve_href
from crawl_assets.crawler.vocabulary import DropReason


def admission(max_depth=2, budget=3, seen=None, mine=lambda host: host != "other.test"):
    workbench = Workbench(weights=(4, 2, 1))
    return Admission(workbench, max_depth, budget, TrapDefences(), mine, seen), workbench


def queued_tasks(workbench: Workbench) -> list[FetchTask]:
    return [t for q in workbench.front_queues for t in q] + [
        t for s in workbench.hosts.values() for t in s.back_queue]


def queued(workbench: Workbench) -> list[str]:
    return [t.url for t in queued_tasks(workbench)]


def test_a_url_is_queued_once_within_depth_and_its_hosts_budget():
    gate, workbench = admission(budget=2)
    assert gate.admit(FetchTask("http://a.test/1", "a.test"))
    assert not gate.admit(FetchTask("http://a.test/1", "a.test"))  # queued already
    assert not gate.admit(FetchTask("http://a.test/deep", "a.test", depth=3))
    assert gate.admit(FetchTask("http://a.test/2", "a.test"))
    assert not gate.admit(FetchTask("http://a.test/3", "a.test"))  # over the budget of 2
    assert gate.admit(FetchTask("http://b.test/1", "b.test"))  # budgets are per host
    assert sorted(queued(workbench)) == ["http://a.test/1", "http://a.test/2", "http://b.test/1"]
    assert workbench.state_of("a.test").admitted == 2
    assert gate.traps.dropped["a.test"] == {DropReason.DEPTH: 1, DropReason.HOST_BUDGET: 1}
    assert not gate.admit(FetchTask("http://a.test/3", "a.test"))  # a refusal is counted once
    assert gate.traps.dropped["a.test"][DropReason.HOST_BUDGET] == 1


def test_links_are_reported_once_each_new_or_known_and_only_this_batchs_hosts_are_queued():
    seen = Bloom(100, 0.01)
    seen.add("http://a.test/known")
    gate, workbench = admission(seen=seen)
    page = FetchTask("http://a.test/", "a.test", depth=0, priority=2)
    gate.admit(page)
    gate.links_found(page, ["http://a.test/known", "http://a.test/new", "http://other.test/x",
                            "http://a.test/" + "abcdefghij" * 300])
    rows = {link.target: link for link in gate.links}
    assert rows["http://a.test/known"] == Link(page.url, "http://a.test/known", "a.test", 1, False, None)
    assert rows["http://a.test/new"].is_new and rows["http://a.test/new"].dropped_reason is None
    assert rows["http://other.test/x"].dropped_reason is None  # another shard's: reported, not queued
    long_url = "http://a.test/" + "abcdefghij" * 300
    assert rows[long_url].dropped_reason == DropReason.URL_TOO_LONG
    assert sorted(queued(workbench)) == ["http://a.test/", "http://a.test/known", "http://a.test/new"]
    # Links are one level deeper and one priority level lower, capped at the lowest level.
    new = next(t for t in queued_tasks(workbench) if t.url.endswith("/new"))
    assert (new.depth, new.priority) == (1, 3)


def test_a_link_refused_by_this_batchs_limits_is_reported_without_a_reason():
    gate, _ = admission(budget=1)
    page = FetchTask("http://a.test/", "a.test")
    gate.admit(page)
    gate.links_found(page, ["http://a.test/x"])  # over the budget: dropped for this batch only
    gate.links_found(FetchTask("http://b.test/", "b.test"), ["http://a.test/x"])
    assert [link.dropped_reason for link in gate.links] == [None, None]
    assert gate.traps.dropped["a.test"] == {DropReason.HOST_BUDGET: 1}


def test_a_redirect_target_joins_its_own_hosts_queue_at_the_same_depth_with_the_chain():
    gate, workbench = admission()
    page = FetchTask("http://a.test/old", "a.test", depth=1, priority=2)
    gate.redirect_found(page, "http://b.test/new", ("http://a.test/old",))
    gate.redirect_found(page, "http://other.test/new", ("http://a.test/old",))
    assert gate.links == [Link(page.url, "http://b.test/new", "b.test", 1, False, None),
                          Link(page.url, "http://other.test/new", "other.test", 1, False, None)]
    (task,) = queued_tasks(workbench)
    assert (task.url, task.host, task.depth, task.redirect_chain) == (
        "http://b.test/new", "b.test", 1, ("http://a.test/old",))


def test_links_found_join_only_while_the_batch_holds_fewer_than_max_pages():
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, max_pages=3)
    for n in range(3):  # the frontier's own URLs: never held back
        assert gate.admit(FetchTask(f"http://a.test/f{n}", "a.test"))
    assert gate.admit(FetchTask("http://a.test/f3", "a.test"))
    page = FetchTask("http://a.test/f0", "a.test", depth=0, priority=1)
    gate.links_found(page, ["http://a.test/x", "http://b.test/y"])
    assert sorted(queued(workbench)) == [f"http://a.test/f{n}" for n in range(4)]
    assert gate.traps.dropped["a.test"] == {DropReason.DAY_BUDGET: 1}
    # A batch limit says nothing about the URL: its link row carries no reason (planned later).
    assert [link.dropped_reason for link in gate.links] == [None, None]
    gate.links_found(page, ["http://a.test/x"])  # found again: refused once
    assert gate.traps.dropped["a.test"] == {DropReason.DAY_BUDGET: 1} and gate.admitted_total == 4


def test_a_shards_seen_filter_answers_for_its_own_hosts_and_leaves_the_others_unknown():
    # Two shards; a.test and the other host fall in different ones (found, not assumed).
    hosts = ["a.test"] + [f"h{n}.test" for n in range(40)]
    mine = shard_of("a.test", 2)
    other = next(h for h in hosts if shard_of(h, 2) != mine)
    bloom = Bloom(100, 0.01)
    bloom.add("http://a.test/known")
    bloom.add(f"http://{other}/known")  # (never in a real shard's filter: it answers for nothing of other's)
    gate, _ = admission(seen=ShardSeenFilter(bloom, mine, 2), mine=lambda host: True)
    page = FetchTask("http://a.test/", "a.test", depth=0)
    gate.admit(page)
    gate.links_found(page, ["http://a.test/known", "http://a.test/new", f"http://{other}/known",
                            f"http://{other}/new"], unfollowed=[f"http://{other}/nofollow"],
                     why_unfollowed=DropReason.NOFOLLOW_LINK)
    assert {link.target: link.is_new for link in gate.links} == {
        "http://a.test/known": False, "http://a.test/new": True,
        f"http://{other}/known": None, f"http://{other}/new": None, f"http://{other}/nofollow": None}
    # Only this shard's new URLs count towards a host's growth (the trap defence's).
    assert gate.traps.new_url_estimate("a.test") == 1 and gate.traps.new_url_estimate(other) == 0


def test_a_link_to_a_host_known_for_https_is_taken_as_https_before_the_seen_check():
    seen = Bloom(100, 0.01)
    seen.add("https://s.test/known")
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, seen, https=HttpsHosts({"s.test"}))
    page = FetchTask("http://a.test/", "a.test")
    gate.admit(page)
    protocol_relative = resolve_href("//s.test/rel", page.url)  # the page's scheme first: http
    gate.links_found(page, ["http://s.test/known", "https://s.test/known", "http://s.test:8080/p", protocol_relative,
                            "http://a.test/stays"])
    assert [(link.target, link.is_new) for link in gate.links] == [
        ("https://s.test/known", False),  # known under its https URL: not new, and queued once
        ("https://s.test/known", False),
        ("https://s.test:8080/p", True),  # another port is kept (RFC 6797 8.3)
        ("https://s.test/rel", True),
        ("http://a.test/stays", True)]
    gate.redirect_found(page, "http://s.test/moved", (page.url,))
    assert sorted(queued(workbench)) == ["http://a.test/", "http://a.test/stays", "https://s.test/known",
                                         "https://s.test/moved", "https://s.test/rel", "https://s.test:8080/p"]


def test_hosts_are_learnt_from_a_redirect_to_the_https_twin_and_from_hsts_and_unlearnt_by_max_age_0():
    https = HttpsHosts()
    https.observe_redirect("http://r.test/a?b=1", "https://r.test/a?b=2")  # not the twin: another page
    https.observe_redirect("http://r.test/a", "https://www.r.test/a")  # another host
    assert https.hosts == set()
    https.observe_redirect("http://r.test/a?b=1", "https://r.test/a?b=1")
    assert https.observe_hsts("http://h.test/", "max-age=31536000") is None  # over http it means nothing
    assert https.observe_hsts("https://h.test/", 'max-age="31536000"; includeSubDomains') is True
    assert https.hosts == {"r.test", "h.test"}
    assert https.observe_hsts("https://h.test/", "includeSubDomains") is None  # no max-age: not a header
    assert https.observe_hsts("https://h.test/", "max-age=0") is False
    assert https.hosts == {"r.test"}
    assert https.upgrade("http://r.test/x") == "https://r.test/x" and https.upgrade("http://h.test/x") == "http://h.test/x"


def test_unfollowed_links_are_new_or_known_by_the_filter_and_the_batch_and_other_shards_unknown():
    """A nofollow link is reported new only when neither the seen filter nor this batch (queued
    or refused) holds it; to another shard's host it is neither."""
    hosts = ["a.test"] + [f"h{n}.test" for n in range(40)]
    mine = shard_of("a.test", 2)
    other = next(h for h in hosts if shard_of(h, 2) != mine)
    bloom = Bloom(100, 0.01)
    bloom.add("http://a.test/known")
    gate, _ = admission(seen=ShardSeenFilter(bloom, mine, 2), mine=lambda host: True)
    page = FetchTask("http://a.test/", "a.test", depth=0)
    gate.admit(page)
    gate.links_found(page, ["http://a.test/queued"])
    gate.links_found(page, [], unfollowed=["http://a.test/known", "http://a.test/new", "http://a.test/queued",
                                           f"http://{other}/nofollow"], why_unfollowed=DropReason.NOFOLLOW_LINK)
    unfollowed = {link.target: link.is_new for link in gate.links if link.dropped_reason == DropReason.NOFOLLOW_LINK}
    assert unfollowed == {"http://a.test/known": False, "http://a.test/new": True, "http://a.test/queued": False,
                          f"http://{other}/nofollow": None}


def test_each_refused_url_counts_once_and_every_one_of_them_counts():
    gate, _ = admission(max_depth=1)
    for url in ("http://a.test/deep1", "http://a.test/deep2", "http://a.test/deep1"):
        assert not gate.admit(FetchTask(url, "a.test", depth=2))
    assert gate.traps.dropped["a.test"] == {DropReason.DEPTH: 2}


def test_a_link_decided_already_is_reported_again_as_known_with_the_reason_it_was_refused_for():
    """A second page linking a URL this batch has queued or refused gets a row of its own: not
    new (the first row said so, once), carrying a trap defence's reason again (a batch limit's
    never), and the URL is neither queued nor its refusal counted again."""
    gate, workbench = admission(budget=2)
    first = FetchTask("http://a.test/", "a.test", depth=0, priority=1)
    gate.admit(first)
    too_long = "http://a.test/" + "abcdefghij" * 300
    gate.links_found(first, ["http://a.test/new", too_long, "http://a.test/over-budget"])
    second = FetchTask("http://b.test/", "b.test", depth=1, priority=1)
    gate.links_found(second, ["http://a.test/new", too_long, "http://a.test/over-budget", "http://a.test/"])
    assert gate.links[3:] == [Link(second.url, "http://a.test/new", "a.test", 2, False, None),
                              Link(second.url, too_long, "a.test", 2, False, DropReason.URL_TOO_LONG),
                              Link(second.url, "http://a.test/over-budget", "a.test", 2, False, None),
                              Link(second.url, "http://a.test/", "a.test", 2, False, None)]
    assert [link.is_new for link in gate.links[:3]] == [True, True, True]
    assert gate.traps.dropped["a.test"] == {DropReason.URL_TOO_LONG: 1, DropReason.HOST_BUDGET: 1}
    assert sorted(queued(workbench)) == ["http://a.test/", "http://a.test/new"]


def test_a_link_is_one_priority_level_below_its_page_and_a_redirect_at_its_pages_level():
    gate, workbench = admission()
    page = FetchTask("http://a.test/", "a.test", depth=0, priority=1)
    gate.links_found(page, ["http://a.test/link"])
    gate.redirect_found(page, "http://a.test/moved", (page.url,))
    assert sorted((t.url, t.priority) for t in queued_tasks(workbench)) == [
        ("http://a.test/link", 2), ("http://a.test/moved", 1)]


def test_a_full_batch_refuses_a_found_url_once_and_never_one_it_holds_already():
    """Full is max_pages URLs held, not more; a URL queued already (a redirect back to it) is
    not refused, and a refused one counts once."""
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, max_pages=2)
    assert gate.admit(FetchTask("http://a.test/f0", "a.test")) and gate.admit(FetchTask("http://a.test/f1", "a.test"))
    page = FetchTask("http://a.test/f0", "a.test", depth=0)
    gate.links_found(page, ["http://a.test/x"])
    assert gate.traps.dropped["a.test"] == {DropReason.DAY_BUDGET: 1}
    gate.redirect_found(page, "http://a.test/f1", (page.url,))  # queued already
    gate.redirect_found(page, "http://a.test/x", (page.url,))  # refused already
    assert gate.traps.dropped["a.test"] == {DropReason.DAY_BUDGET: 1}
    assert not gate.admit_found(FetchTask("http://a.test/f1", "a.test"))
    assert not gate.admit_found(FetchTask("http://a.test/x", "a.test"))
    assert not gate.admit_found(FetchTask("http://a.test/y", "a.test"))
    assert gate.traps.dropped["a.test"] == {DropReason.DAY_BUDGET: 2}
    assert sorted(queued(workbench)) == ["http://a.test/f0", "http://a.test/f1"] and gate.admitted_total == 2


def test_only_the_batchs_own_hosts_new_urls_count_towards_a_hosts_growth():
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, own_hosts=lambda host: host == "a.test")
    gate.links_found(FetchTask("http://a.test/", "a.test"), ["http://a.test/new", "http://b.test/new"])
    assert gate.traps.new_url_estimate("a.test") == 1 and gate.traps.new_url_estimate("b.test") == 0


def test_a_link_is_folded_by_its_hosts_aliases_before_the_seen_check_and_the_queue():
    seen = Bloom(100, 0.01)
    seen.add("http://a.test/p?id=7")
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, seen,
                     aliases=AliasRules([AliasRule("a.test", AliasKind.PARAMETER, "from")]))
    page = FetchTask("http://a.test/", "a.test")
    gate.links_found(page, ["http://a.test/p?from=3&id=7", "http://a.test/q?from=1", "http://b.test/p?from=3&id=7"])
    assert [(link.target, link.is_new) for link in gate.links] == [
        ("http://a.test/p?id=7", False), ("http://a.test/q", True), ("http://b.test/p?from=3&id=7", True)]
    assert sorted(queued(workbench)) == ["http://a.test/p?id=7", "http://a.test/q", "http://b.test/p?from=3&id=7"]


def test_a_link_to_a_demoted_host_is_refused_and_counted_for_that_host():
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(demoted_hosts=frozenset({"d.test"})), lambda host: True)
    page = FetchTask("http://a.test/", "a.test")
    gate.links_found(page, ["http://d.test/x", "http://a.test/x"])
    assert [link.dropped_reason for link in gate.links] == [DropReason.DEMOTED_HOST, None]
    assert gate.traps.dropped == {"d.test": {DropReason.DEMOTED_HOST: 1}}
    assert queued(workbench) == ["http://a.test/x"]


def test_an_unfollowed_link_is_reported_whole_and_as_https_on_a_host_known_for_it():
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 2, 10, TrapDefences(), lambda host: True, https=HttpsHosts({"s.test"}))
    page = FetchTask("http://a.test/", "a.test", depth=1)
    gate.links_found(page, [], unfollowed=["http://s.test/nf", "http://a.test/nf"], why_unfollowed=DropReason.NOFOLLOW_LINK)
    assert gate.links == [Link(page.url, "https://s.test/nf", "s.test", 2, True, DropReason.NOFOLLOW_LINK),
                          Link(page.url, "http://a.test/nf", "a.test", 2, True, DropReason.NOFOLLOW_LINK)]
    assert queued(workbench) == []


def test_a_resumed_batch_does_not_queue_again_what_it_finished_before_its_crash():
    gate, workbench = admission()
    gate.already_done(["http://a.test/done"])
    page = FetchTask("http://a.test/", "a.test", depth=0)
    gate.links_found(page, ["http://a.test/done", "http://a.test/open"])
    assert not gate.admit(FetchTask("http://a.test/done", "a.test"))
    assert [(link.target, link.is_new) for link in gate.links] == [("http://a.test/done", False), ("http://a.test/open", True)]
    assert queued(workbench) == ["http://a.test/open"]


def test_a_sitemaps_list_does_not_count_towards_its_hosts_growth_but_its_pages_links_do():
    """A site's sitemap of 640 pages read after one page of it is the host's own list, not a
    trap's growth: every URL it lists is reported new and queued, and the host is not capped;
    the same number of new URLs found as a page's links caps it (growth_min_urls 500, ratio 10)."""
    def gate_after_one_fetch():
        workbench = Workbench(weights=(4, 2, 1))
        traps = TrapDefences(TrapLimits(growth_ratio=10, growth_min_urls=500, max_urls_per_pattern=10**6))
        traps.observe_fetch("big.test")
        return Admission(workbench, 2, 1000, traps, lambda host: True), workbench

    urls = [f"http://big.test/p/{i}" for i in range(640)]
    gate, workbench = gate_after_one_fetch()
    gate.links_found(FetchTask("http://big.test/sitemap.xml", "big.test", depth=1), urls, listed=True)
    assert "big.test" not in gate.traps.capped_hosts and gate.traps.new_url_estimate("big.test") == 0
    assert sum(link.is_new and link.dropped_reason is None for link in gate.links) == 640
    assert len(queued(workbench)) == 640
    gate, workbench = gate_after_one_fetch()
    gate.links_found(FetchTask("http://big.test/", "big.test"), urls)
    assert "big.test" in gate.traps.capped_hosts
    # capped at the 512th new URL (the sketch is counted every 64): the rest refused
    assert sum(link.dropped_reason == DropReason.HOST_GROWTH_CAPPED for link in gate.links) == 128
    assert len(queued(workbench)) == 512
