"""The fetch loop against a live demo web on loopback, checked from the server's access log."""

import dataclasses
import gc
import ipaddress
from collections import defaultdict

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.batches.batch import run_fetch_batch
from crawl_assets.crawler.fetching.engine import YOUNG_GC_THRESHOLD, fewer_young_collections
from crawl_assets.crawler.fetching.workbench import FetchTask
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.url_policy.sharding import shard_of
from crawl_assets.crawler.vocabulary import StatusClass, WarcRecordKind
from demoweb import DemoWeb, DemoWebThread, Response
from support import DemoWebProcess, assert_polite, assert_warcio_check_passes

DELAY = 0.03


@pytest.fixture(scope="module")
def web():
    with DemoWebThread(DemoWeb(seed=3, hosts=40, pages_per_host=8), port=0) as server:
        yield server


@pytest.fixture(scope="module")
def canary():
    """A server nothing may reach: the crawler must refuse every address it is linked under."""
    with DemoWebThread(DemoWeb(seed=4, hosts=1, pages_per_host=1), port=0) as server:
        yield server


def settings(**overrides):
    base = load_settings(use_env=False)
    demo = dict(
        default_delay_s=DELAY, max_pages_per_host=6, max_depth=2, shard_count=1,
        resolver_overrides={"*.demo.test": "127.0.0.1", "canary.test": "127.0.0.2"},
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
        host_scope=("*.demo.test",),
    )
    return dataclasses.replace(base, **(demo | overrides))


def test_politeness_robots_budget_and_depth_hold_across_a_200_host_batch(tmp_path):
    """Politeness proven from the outside: the demo web's own access log."""
    with DemoWebProcess(seed=3, hosts=200, pages_per_host=8) as server:
        tasks = [FetchTask.for_url(url) for url in server.web.seed_urls()]
        result = run_fetch_batch(settings(), 0, tasks, tmp_path, "t")
        rows = server.stop()
    web = server.web

    records = result.output.records
    by_host = defaultdict(list)
    for row in rows:
        by_host[row["host"]].append(row)
    assert len(by_host) == 200
    crawl_delays = {}
    for host, hits in by_host.items():
        rules = web.robots_rules(web.host_index(host))
        crawl_delays[host] = rules["crawl_delay"] or 0.0
        hits.sort(key=lambda r: r["start"])
        assert hits[0]["path"] == "/robots.txt"  # asked once, before any page
        pages = [r for r in hits if r["path"] != "/robots.txt"]
        assert len(pages) <= 6  # the per-host budget
        assert not any(r["path"].startswith(tuple(rules["disallow"])) for r in pages if rules["disallow"])
    assert_polite(rows, DELAY, crawl_delays)
    assert set(crawl_delays.values()) > {0.0}  # some hosts asked for a longer Crawl-delay
    fetched = [r for r in records if r.status_class == StatusClass.OK]
    assert len(fetched) == sum(len(hits) - 1 for hits in by_host.values())
    assert max(r.depth for r in records) <= 2
    assert {r.status_class for r in records} <= {StatusClass.OK, StatusClass.ROBOTS_DISALLOWED}
    assert all(r.sha256 and r.warc_file and r.ip == "127.0.0.1" for r in fetched)


def test_with_few_hosts_in_flight_each_host_still_waits_its_delay(tmp_path):
    """Three hosts, many pages each: the engine could ask a host again at once, so only the
    delay (0.12 s, or the host's longer Crawl-delay) spaces its requests."""
    delay = 0.12
    with DemoWebProcess(seed=5, hosts=3, pages_per_host=12) as server:
        tasks = [FetchTask.for_url(url) for url in server.web.seed_urls()]
        result = run_fetch_batch(settings(default_delay_s=delay, max_pages_per_host=10, max_depth=1),
                                 0, tasks, tmp_path, "t")
        rows = server.stop()
    web = server.web
    crawl_delays = {web.hostname(i): web.robots_rules(i)["crawl_delay"] or 0.0 for i in range(3)}
    assert len(rows) >= 3 * 8  # robots.txt and most of each host's budget
    assert sum(r.status_class == StatusClass.OK for r in result.output.records) == len(rows) - 3
    assert_polite(rows, delay, crawl_delays)


def test_robots_sitemap_lines_feed_the_batch(web, tmp_path):
    with_sitemap = [i for i in range(16) if web.web.robots_rules(i)["sitemaps"]][:3]
    # The loop below checks nothing unless hosts listing a sitemap were picked.
    assert len(with_sitemap) == 3, [web.web.robots_rules(i) for i in range(16)]
    tasks = [FetchTask.for_url(web.web.seed_urls()[i]) for i in with_sitemap]
    result = run_fetch_batch(settings(max_pages_per_host=50, max_depth=1), 0, tasks, tmp_path, "t")
    links = {(link[0], link[1]) for link in result.output.links}
    by_url = {r.url: r for r in result.output.records}
    for i in with_sitemap:
        base = web.web.base_url(i)
        (sitemap,) = web.web.robots_rules(i)["sitemaps"]
        assert (base + "/robots.txt", sitemap) in links
        assert by_url[sitemap].status_class == StatusClass.OK and by_url[sitemap].warc_file
        # The sitemap was fetched and every page it lists became a link from it.
        assert {(sitemap, page) for page in web.web.page_urls(i)} <= links


def test_links_to_other_shards_are_returned_not_fetched(web, tmp_path):
    web.access_log.clear()
    two_shards = settings(shard_count=2, max_pages_per_host=3)
    mine = [u for u in web.web.seed_urls() if shard_of(u.split("/")[2].split(":")[0], 2) == 0]
    result = run_fetch_batch(two_shards, 0, [FetchTask.for_url(u) for u in mine], tmp_path, "t")

    fetched_hosts = {r.host for r in result.output.records}
    assert fetched_hosts and all(shard_of(h, 2) == 0 for h in fetched_hosts)
    linked_hosts = {link[2] for link in result.output.links}
    assert any(shard_of(h, 2) == 1 for h in linked_hosts)  # found, and left for their shard


def test_non_public_targets_are_refused_without_a_connection(web, canary, tmp_path):
    """Targets on loopback outside the allowed scope only: the canary's log proves none was asked."""
    canary.access_log.clear()
    bare = f"http://127.0.0.1:{canary.port}/secret"

    def redirect_to_canary(_web, path, _headers):
        # robots.txt and every page of this demo host redirect to the bare loopback address.
        return Response(302, [("Location", bare), ("Content-Length", "0")], b"")

    web.web.register_host("redirector.demo.test", redirect_to_canary)
    redirector = f"http://redirector.demo.test:{web.port}/page.html"
    tasks = [
        FetchTask.for_url(f"http://127.0.0.1:{canary.port}/"),  # a bare loopback link on a page
        FetchTask.for_url(f"http://canary.test:{canary.port}/"),  # a name that resolves to loopback
        FetchTask.for_url(redirector),  # allowed host, redirecting to a refused address
        FetchTask.for_url(web.web.seed_urls()[0]),
    ]
    result = run_fetch_batch(settings(host_scope=()), 0, tasks, tmp_path, "t")
    by_url = {r.url: r for r in result.output.records}
    assert by_url[tasks[0].url].status_class == StatusClass.BLOCKED_ADDRESS
    assert by_url[tasks[1].url].status_class == StatusClass.BLOCKED_ADDRESS
    assert "127.0.0.2" in by_url[tasks[1].url].error
    # robots.txt redirected to the canary: that hop is refused, and the host with it.
    assert by_url[redirector].status_class == StatusClass.BLOCKED_ADDRESS
    assert by_url[redirector].error.startswith("robots.txt: 127.0.0.1 resolves to 127.0.0.1")
    assert by_url[tasks[3].url].status_class == StatusClass.OK
    assert len(canary.access_log) == 0


def test_a_redirect_to_a_refused_address_is_recorded_not_followed(web, canary, tmp_path):
    canary.access_log.clear()
    bare = f"http://127.0.0.1:{canary.port}/secret"

    def redirect_page(_web, path, _headers):
        if path == "/robots.txt":
            return Response(404, [("Content-Length", "0")], b"")
        return Response(302, [("Location", bare), ("Content-Length", "0")], b"")

    web.web.register_host("jump.demo.test", redirect_page)
    start = f"http://jump.demo.test:{web.port}/go"
    result = run_fetch_batch(settings(host_scope=()), 0, [FetchTask.for_url(start)], tmp_path, "t")
    by_url = {r.url: r for r in result.output.records}
    assert by_url[start].status_class == StatusClass.REDIRECT and by_url[start].redirect_to == bare
    assert by_url[bare].status_class == StatusClass.BLOCKED_ADDRESS
    assert len(canary.access_log) == 0


def test_a_closed_port_ends_as_connect_error(tmp_path):
    closed = "http://closed.demo.test:9/"  # nothing listens on loopback port 9
    result = run_fetch_batch(settings(), 0, [FetchTask.for_url(closed)], tmp_path, "t")
    (record,) = result.output.records
    assert record.status_class == StatusClass.CONNECT_ERROR and record.error
    assert result.warc_files == []  # nothing was received, so nothing is archived


def test_a_payload_archived_before_is_written_as_a_revisit_record(web, tmp_path):
    body = b"<html><body><p>the same page under two names</p></body></html>"

    def mirror(_web, path, _headers):
        if path == "/robots.txt":
            return Response(404, [("Content-Length", "0")], b"")
        return Response(200, [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], body)

    web.web.register_host("mirror.demo.test", mirror)
    first, second = (f"http://mirror.demo.test:{web.port}/{name}" for name in ("a.html", "print/a.html"))
    earlier = "http://elsewhere.demo.test/old.html"
    third = f"http://mirror.demo.test:{web.port}/again.html"
    result = run_fetch_batch(settings(), 0, [FetchTask.for_url(u) for u in (first, second)], tmp_path, "t")
    by_url = {r.url: r for r in result.output.records}
    assert (by_url[first].warc_type, by_url[second].warc_type) == (WarcRecordKind.RESPONSE, WarcRecordKind.REVISIT)
    assert by_url[second].refers_to == first
    assert by_url[first].payload_digest == by_url[second].payload_digest

    (path,) = result.warc_files
    assert_warcio_check_passes(path)
    with open(path, "rb") as fh:
        revisit = [r for r in ArchiveIterator(fh) if r.rec_type == WarcRecordKind.REVISIT][0]
    headers = revisit.rec_headers
    assert headers.get_header("WARC-Profile").endswith("/revisit/identical-payload-digest")
    assert headers.get_header("WARC-Refers-To-Target-URI") == first
    assert headers.get_header("WARC-Payload-Digest") == by_url[first].payload_digest

    # A payload archived on an earlier day counts too.
    known = {by_url[first].payload_digest: (earlier, "2026-11-28T00:00:00.000000Z")}
    again = run_fetch_batch(settings(), 0, [FetchTask.for_url(third)], tmp_path / "2", "t",
                            known_payloads=known)
    (record,) = again.output.records
    assert record.warc_type == WarcRecordKind.REVISIT and record.refers_to == earlier


def test_a_batch_collects_young_objects_less_often_and_gives_the_collector_back(web, tmp_path):
    # the collector's young threshold and frozen objects whenever the crawler asks the server
    thresholds, frozen = [], []

    def probe(_web, path, _headers):
        thresholds.append(gc.get_threshold()[0])
        frozen.append(gc.get_freeze_count())
        return Response(404, [("Content-Length", "0")], b"")

    web.web.register_host("gcprobe.demo.test", probe)
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    result = run_fetch_batch(settings(), 0, [FetchTask.for_url(f"http://gcprobe.demo.test:{web.port}/")],
                             tmp_path, "t")
    assert [r.status for r in result.output.records] == [404]
    assert len(thresholds) == 2 and min(thresholds) >= YOUNG_GC_THRESHOLD  # robots.txt, the page
    assert min(frozen) > 1000  # what was alive before the batch (the modules' objects, at least)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError):  # a batch that fails gives it back too
        with fewer_young_collections():
            assert gc.get_threshold()[0] >= YOUNG_GC_THRESHOLD and gc.get_freeze_count() > 0
            raise RuntimeError("the batch broke")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_new_links_to_another_shards_host_cap_nothing_on_a_first_day(web, tmp_path):
    """A batch never fetches another shard's host, so it cannot weigh that host's growth (new
    URLs against its own fetches, which are 0 here): on the first day (no seen filter, every
    link new) the links to it are recorded without a refusal, as with a shard's seen filter,
    and the host is not capped (its refused links would have left the crawl's known URLs)."""
    hub_host = "hub.demo.test"
    mine = shard_of(hub_host, 2)
    other = next(h for h in (f"w{n}.demo.test" for n in range(40)) if shard_of(h, 2) != mine)
    body = "".join(f'<a href="http://{other}/a{n}">{n}</a>' for n in range(300)).encode()
    body = b"<html><body>" + body + b"</body></html>"

    def hub(_web, path, _headers):
        if path == "/robots.txt":
            return Response(404, [("Content-Length", "0")], b"")
        return Response(200, [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], body)

    web.web.register_host(hub_host, hub)
    result = run_fetch_batch(settings(shard_count=2, host_growth_min_urls=64), mine,
                             [FetchTask.for_url(f"http://{hub_host}:{web.port}/")], tmp_path, "t")
    links = [link for link in result.output.links if link[2] == other]
    assert len(links) == 300 and all(link[5] is None for link in links)  # none refused
    assert other not in result.output.dropped
