"""Pages' own signals (page_signals.py): robots <meta>, X-Robots-Tag and rel="nofollow", from
the parsers to the fetch-log row and the links table. No network."""

import dataclasses
import ipaddress
from datetime import datetime, timezone

import pyarrow as pa
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import Exchange, WarcFileWriter
from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.content.links import scan_page
from crawl_assets.crawler.content.page_signals import PageDirectives, header_directives, meta_directives, rel_nofollow
from crawl_assets.crawler.fetching.admission import Admission, Link
from crawl_assets.crawler.fetching.answer_policy import OUTCOME
from crawl_assets.crawler.fetching.answer_records import AnswerRecorder
from crawl_assets.crawler.fetching.http_exchange import HopResult, header_map
from crawl_assets.crawler.fetching.workbench import FetchTask, Workbench
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.url_policy.robots import product_token
from crawl_assets.crawler.url_policy.trap_defences import TrapDefences
from crawl_assets.crawler.vocabulary import DropReason, StatusClass
from crawl_assets.pipeline.fetch_step import FetchInputs, run_fetch_step
from demoweb import DemoWebProcess
from demoweb.special_hosts.signal_hosts import AGENT as SIGNAL_AGENT, signal_hosts

AGENT = "recrawl"
NOINDEX, NOFOLLOW, BOTH, NEITHER = (PageDirectives(True, False), PageDirectives(False, True),
                                    PageDirectives(True, True), PageDirectives())
WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def page(head: str = "", body: str = "") -> bytes:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body><p>Words.</p>{body}</body></html>".encode()


def test_x_robots_tag_values_apply_to_every_crawler_or_to_the_agent_they_name():
    assert header_directives(["noindex"], AGENT) == NOINDEX
    assert header_directives(["NoIndex, NOFOLLOW"], AGENT) == BOTH
    assert header_directives(["none"], AGENT) == BOTH
    assert header_directives(["all", "index, follow, noarchive"], AGENT) == NEITHER
    # A user agent prefix holds for the rest of its header line; other crawlers' rules are theirs.
    assert header_directives(["googlebot: noindex, nofollow"], AGENT) == NEITHER
    assert header_directives(["recrawl: nofollow"], AGENT) == NOFOLLOW
    assert header_directives(["RECRAWL: noindex", "googlebot: nofollow"], AGENT) == NOINDEX
    assert header_directives(["googlebot: noindex", "nofollow"], AGENT) == NOFOLLOW  # a new line: everyone
    assert header_directives(["otherbot: none, recrawl: noindex"], AGENT) == NOINDEX
    # Directives with a value after a colon are not user agents.
    assert header_directives(["unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"], AGENT) == NOINDEX
    assert header_directives(["max-snippet: 20, nofollow"], AGENT) == NOFOLLOW


def test_robots_meta_tags_for_all_crawlers_and_for_us_apply_others_do_not():
    assert meta_directives([("robots", "noindex")], AGENT) == NOINDEX
    assert meta_directives([("ROBOTS", "NoFollow")], AGENT) == NOFOLLOW
    assert meta_directives([("googlebot", "noindex, nofollow"), ("bingbot", "none")], AGENT) == NEITHER
    assert meta_directives([("recrawl", "nofollow"), ("robots", "noindex")], AGENT) == BOTH  # they add up
    assert meta_directives([("robots", None), ("viewport", "width=device-width"), (None, "x")], AGENT) == NEITHER


def test_rel_nofollow_ugc_and_sponsored_are_not_followed():
    assert rel_nofollow("nofollow") and rel_nofollow("external UGC") and rel_nofollow("sponsored noopener")
    assert not rel_nofollow("noopener noreferrer") and not rel_nofollow("") and not rel_nofollow(None)
    scan = scan_page(page('<meta name="robots" content="noindex"><meta name="googlebot" content="nofollow">',
                          '<a href="/a" rel="nofollow">a</a> <a href="/b" rel="ugc">b</a>'
                          '<a href="/c" rel="noopener">c</a> <area href="/d" rel="sponsored">'
                          '<a href="/e" rel="nofollow">e</a> <a href="/e">e again</a>'), "http://x.test/", AGENT)
    assert scan.links == ["http://x.test/c", "http://x.test/e"]  # linked without nofollow too: followed
    assert scan.nofollow_links == ["http://x.test/a", "http://x.test/b", "http://x.test/d"]
    assert scan.directives == NOINDEX  # googlebot's nofollow is not ours


def answer(url: str, body: bytes, headers: list[tuple[str, str]]) -> HopResult:
    headers = [("Content-Type", "text/html")] + headers
    exchange = Exchange(url, "192.0.2.1", WHEN, "GET", "/", [("Host", "a.test")], "HTTP/1.1", 200, "OK",
                        headers, body, False)
    return HopResult(url, WHEN, 0.01, "192.0.2.1", True, exchange, header_map(headers))


def capture_all(tmp_path, answers):
    with WarcFileWriter(tmp_path, "t", "test") as warc:
        capture = AnswerRecorder(warc, 100_000, TrapDefences(), agent=AGENT)
        results = [capture.record(FetchTask.for_url(hop.url), hop, OUTCOME) for hop in answers]
    with open(warc.closed_files[0], "rb") as fh:
        archived = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)
                    if r.rec_type in ("response", "revisit")]  # a copy of an earlier body is a revisit
    return results, archived


def test_noindex_pages_are_archived_and_flagged_and_nofollow_pages_report_links_without_following(tmp_path):
    links = '<a href="/1">1</a> <a href="/2" rel="nofollow">2</a>'
    (plain, meta_noindex, header_noindex, meta_nofollow, header_for_us, header_for_google), archived = capture_all(
        tmp_path, [answer("http://a.test/plain", page(body=links), []),
                   answer("http://a.test/mi", page('<meta name="robots" content="noindex">', links), []),
                   answer("http://a.test/hi", page(body=links), [("X-Robots-Tag", "noindex")]),
                   answer("http://a.test/mf", page('<meta name="recrawl" content="nofollow">', links), []),
                   answer("http://a.test/hf", page(body=links), [("X-Robots-Tag", "googlebot: noindex"),
                                                                  ("X-Robots-Tag", "recrawl: none")]),
                   answer("http://a.test/hg", page(body=links), [("X-Robots-Tag", "googlebot: none")])])
    # Every page is archived, whatever it says about indexing.
    assert archived == ["http://a.test/plain", "http://a.test/mi", "http://a.test/hi", "http://a.test/mf",
                        "http://a.test/hf", "http://a.test/hg"]
    flags = [(r.noindex, r.nofollow) for r, _ in (plain, meta_noindex, header_noindex, meta_nofollow,
                                                   header_for_us, header_for_google)]
    assert flags == [(False, False), (True, False), (True, False), (False, True), (True, True), (False, False)]
    assert all(r.status_class == StatusClass.OK and r.outlinks == 2 for r, _ in (plain, meta_nofollow))
    assert plain[1][:3] == (["http://a.test/1"], ["http://a.test/2"], DropReason.NOFOLLOW_LINK)
    assert meta_nofollow[1][:3] == ([], ["http://a.test/1", "http://a.test/2"], DropReason.PAGE_NOFOLLOW)
    assert header_for_us[1].follow == [] and header_for_google[1].follow == ["http://a.test/1"]


def queued(workbench: Workbench) -> list[str]:
    return [t.url for q in workbench.front_queues for t in q] + [
        t.url for state in workbench.hosts.values() for t in state.back_queue]


def test_unfollowed_links_are_reported_not_queued_and_a_followable_link_still_queues_the_url():
    workbench = Workbench(weights=(4, 2, 1))
    gate = Admission(workbench, 3, 10, TrapDefences(), lambda host: True)
    source = FetchTask("http://a.test/", "a.test")
    gate.links_found(source, ["http://a.test/1"], ["http://a.test/2", "http://a.test/1"], DropReason.NOFOLLOW_LINK)
    assert gate.links == [Link("http://a.test/", "http://a.test/1", "a.test", 1, True, None),
                          Link("http://a.test/", "http://a.test/2", "a.test", 1, True, DropReason.NOFOLLOW_LINK),
                          Link("http://a.test/", "http://a.test/1", "a.test", 1, False, DropReason.NOFOLLOW_LINK)]
    assert queued(workbench) == ["http://a.test/1"]
    gate.links_found(FetchTask("http://a.test/other", "a.test"), ["http://a.test/2"])
    assert queued(workbench) == ["http://a.test/1", "http://a.test/2"]


# -- live: the demo web's signal host, crawled by the fetch step ------------------------------

def test_a_live_crawl_follows_google_defaults_for_the_pages_own_signals(tmp_path):
    """The signal host (demoweb/special_hosts/signal_hosts.py) crawled from its home page by the fetch step:
    the server's log shows which links were followed; the fetch log flags noindex/nofollow
    pages (all of them fetched and archived); the links table and the step's counts say why
    the rest were not followed."""
    settings = dataclasses.replace(
        load_settings(use_env=False), default_delay_s=0.0, shard_count=1, max_pages_per_host=100,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))
    assert product_token(settings.user_agent).lower() == SIGNAL_AGENT
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=2, page_signals=True) as server:
        (host,) = signal_hosts(server.web)
        frontier = pa.Table.from_pylist([{"url": host.home, "host": host.hostname, "depth": 0, "priority": 1}],
                                        schema=FRONTIER_SCHEMA)
        result = run_fetch_step(settings, "s00", FetchInputs(frontier), tmp_path / "warc", "signals")
        rows = server.stop()
    requested = {f"http://{r['host']}:{server.web.port}{r['path']}" for r in rows if r["path"] != "/robots.txt"}
    assert requested == set(host.fetched) and not requested & set(host.never_fetched)

    log = {r["url"]: r for r in result.fetch_log.to_pylist()}
    assert set(log) == set(host.fetched) and {r["status_class"] for r in log.values()} == {StatusClass.OK}
    assert all(r["warc_type"] in ("response", "revisit") and r["warc_length"] for r in log.values())
    for url, page in host.pages.items():
        assert (log[url]["noindex"], log[url]["nofollow"]) == (page.noindex, page.nofollow), url
    assert not any(log[u]["noindex"] or log[u]["nofollow"] for u in log if u not in host.pages)

    why = {(link["source"], link["target"]): link["dropped_reason"] for link in result.links.to_pylist()}
    base = host.home.rstrip("/")
    assert why[(base + "/meta-none.html", base + "/after/meta-none.html")] == DropReason.PAGE_NOFOLLOW
    assert why[(base + "/rel-links.html", base + "/after/rel-ugc.html")] == DropReason.NOFOLLOW_LINK
    assert why[(base + "/rel-links.html", base + "/after/rel-both.html")] is None  # also linked plainly
    assert why[(base + "/meta-googlebot.html", base + "/after/meta-googlebot.html")] is None
    counts = result.counts
    assert (counts.noindex_pages, counts.nofollow_pages) == (
        sum(p.noindex for p in host.pages.values()), sum(p.nofollow for p in host.pages.values()))
    assert counts.unfollowed_links == {DropReason.PAGE_NOFOLLOW: 5, DropReason.NOFOLLOW_LINK: 3}


def test_robots_meta_tags_are_found_by_the_scan_however_their_names_are_spelt():
    # The scan reads only the <meta> names that can be "robots" or the agent's (link_sources.selector_for):
    # every spelling that strips and lowers to one of them must still be found.
    cases = [
        ('<meta name=" ROBOTS " content="noindex">', "recrawl", NOINDEX),
        ('<meta name="Robots" content="NoFollow">', "recrawl", NOFOLLOW),
        ('<meta name="\tReCrawl\n" content="none">', "recrawl", BOTH),
        ('<meta name="googlebot" content="noindex"><meta name="robots-extra" content="noindex">', "recrawl", NEITHER),
        ('<meta name="robots" http-equiv="refresh" content="noindex">', "recrawl", NOINDEX),
        # An agent with a "k": the Kelvin sign lowers to "k", so every named <meta> is read.
        ('<meta name="\u212abot" content="noindex">', "kbot", NOINDEX),
        ('<meta name="Crawler.2" content="nofollow">', "crawler.2", NOFOLLOW),
        ('<meta name=" " content="noindex">', "", NOINDEX),  # no agent: the name "" is its own
    ]
    for head, agent, expected in cases:
        assert scan_page(page(head), "http://example.test/", agent).directives == expected, (head, agent)
