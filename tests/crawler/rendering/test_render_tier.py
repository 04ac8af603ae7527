"""The render tier (crawl_assets/crawler/rendering/) in one fetch step over the demo web's SPA
hosts and one ordinary host, with Debian's chromium (one browser start for the module).
render_hosts = ["auto", "spa-router.demo.test"]: spa-router is listed, spa-json and spa-more are
learnt from a sample of their pages (render_decision.py). The script-only pages and their links
are found, each host's decision and evidence is in the step's render_decisions table, the browser's own requests keep each host's delay
and one request in flight in the demo web's access log, a robots-disallowed script is never
requested, the WARC holds every exchange and the rendered DOM, pywb replays the rendered page,
and the ordinary host is not rendered. Loopback only."""

import dataclasses
import ipaddress
import shlex
import subprocess
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.pipeline.fetch_step import FetchInputs, run_fetch_step
from demoweb import DemoWebProcess
from demoweb.special_hosts.spa_hosts import CRAWL_DELAY_S, spa_hosts
from pywb_support import PYWB_BIN, free_port, require_pywb, running_wayback
from support import assert_polite

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

DELAY_S = 0.05


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    settings = dataclasses.replace(
        load_settings(use_env=False), default_delay_s=DELAY_S, shard_count=1, max_pages_per_host=100,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
        render_hosts=("auto", "spa-router.demo.test"), render_pool_size=2, response_time_factor=0.0,
        checkpoint_interval_s=0.05)  # checkpoints save rows before their render: rendered all the same
    warc_dir = tmp_path_factory.mktemp("warc")
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=2, spa=True) as server:
        hosts = {h.kind: h for h in spa_hosts(server.web)}
        seeds = [(h.home, h.hostname) for h in hosts.values()] + [(server.web.base_url(0) + "/", server.web.hostname(0))]
        frontier = pa.Table.from_pylist([{"url": u, "host": h, "depth": 0, "priority": 1} for u, h in seeds],
                                        schema=FRONTIER_SCHEMA)
        result = run_fetch_step(settings, "s00", FetchInputs(frontier), warc_dir, "render")
        rows = server.stop()
    return hosts, result, rows, server.web


def test_script_only_pages_and_their_links_are_found_and_rendered(crawl):
    hosts, result, _, web = crawl
    log = {r["url"]: r for r in result.fetch_log.to_pylist()}
    assert len(log) == result.fetch_log.num_rows  # a rendered row replaces its plain one, checkpointed or not
    for host in hosts.values():
        assert set(host.pages) <= set(log), host.kind  # the home page was the only seed
        assert all(log[u]["status_class"] == StatusClass.OK for u in host.pages)
    shells = [u for h in hosts.values() for u in h.pages if not u.startswith(hosts["load_more"].home + "item/")]
    assert [u for u in shells if not (log[u]["rendered"] and log[u]["simhash"])] == []
    # spa-router sends one shell for every route: archived once, the others revisits, all rendered
    routes = [log[u]["warc_type"] for u in hosts["routes"].pages]
    assert sorted(routes) == ["response"] + ["revisit"] * (len(routes) - 1)
    assert len({log[u]["simhash"] for u in hosts["routes"].pages}) == len(routes)  # each its view's text
    assert all(log[h.home]["outlinks"] >= 2 for h in hosts.values())  # the plain shells have none
    found = {(link["source"], link["target"]) for link in result.links.to_pylist()}
    more = hosts["load_more"]
    assert {(more.home, item) for item in more.js_only} <= found  # items behind three "Load more" clicks
    ordinary = [r for r in log.values() if r["host"] == web.hostname(0)]
    assert ordinary and not any(r["rendered"] for r in ordinary)
    # spa-more's items are plain HTML fetched before the host was decided: not rendered
    assert result.counts.rendered_pages == len(shells)


def test_each_host_is_decided_on_its_evidence(crawl):
    hosts, result, _, web = crawl
    rows = {r["host"]: r for r in result.render_decisions.to_pylist()}
    assert web.hostname(0) not in rows  # no page of the ordinary host showed the signals
    articles, router, more = (rows[hosts[kind].hostname] for kind in ("json", "routes", "load_more"))
    assert (articles["decision"], articles["pages_sampled"], articles["signal_pages"]) == ("render", 3, 5)
    assert articles["plain_links"] == 0 and articles["rendered_links"] == 3  # / -> 1, 2; 1 -> 3
    assert articles["plain_text_chars"] == 0 and articles["rendered_text_chars"] > 600
    assert articles["pages_rendered"] == 5
    assert (more["decision"], more["pages_sampled"], more["rendered_links"]) == ("render", 1, 6)
    assert (router["decision"], router["pages_sampled"], router["pages_rendered"]) == ("listed", 4, 4)


def test_the_browser_requests_keep_each_hosts_delay_and_robots(crawl):
    hosts, _, rows, _ = crawl
    articles = hosts["json"]
    paths = {(r["host"], r["path"]) for r in rows}
    assert (articles.hostname, "/static/app.js") in paths and (articles.hostname, "/api/pages/articles/3.json") in paths
    assert not any(r["path"].startswith("/tracking/") for r in rows)  # robots.txt disallows the beacon
    pages = [r for r in rows if r["host"] == articles.hostname and not r["path"].startswith(("/api/", "/static/"))]
    assert len(pages) == len(articles.pages) + 1  # each page once (the browser is served the plain answer), robots.txt
    assert_polite(rows, DELAY_S, {articles.hostname: CRAWL_DELAY_S})


def test_the_warc_holds_each_exchange_and_the_rendered_dom(crawl):
    hosts, result, _, _ = crawl
    records = []
    for path in result.warc_files:
        with open(path, "rb") as stream:
            records += [(r.rec_type, r.rec_headers, r.content_stream().read()) for r in ArchiveIterator(stream)]
    responses = {h.get_header("WARC-Record-ID"): h.get_header("WARC-Target-URI") for t, h, _ in records if t == "response"}
    assert hosts["json"].home + "static/app.js" in responses.values()
    assert hosts["json"].home + "api/items?page=0" not in responses.values()
    conversions = {h.get_header("WARC-Target-URI"): (h.get_header("WARC-Refers-To"), body)
                   for t, h, body in records if t == "conversion"}
    refers_to, dom = conversions[hosts["json"].home]
    assert responses[refers_to] == hosts["json"].home
    assert b'<a href="/articles/1">' in dom and b"never sent as HTML" in dom


def test_pywb_replays_the_rendered_page(crawl, tmp_path):
    """pywb indexes the rendered DOM's record under the page's URL and time, beside its response,
    and replays it: the links and text the page's script wrote, which the HTML sent lacks."""
    require_pywb()
    hosts, result, _, _ = crawl
    home = hosts["json"].home
    timestamp = "".join(c for c in conversion_date(result.warc_files, home) if c.isdigit())[:14]
    run = lambda *args: subprocess.run([str(PYWB_BIN / "wb-manager"), *args], cwd=tmp_path,  # noqa: E731
                                       check=True, capture_output=True, timeout=120)
    run("init", "rendered")
    run("add", "rendered", *map(str, result.warc_files))
    port = free_port()
    command = shlex.join([str(PYWB_BIN / "wayback"), "-b", "127.0.0.1", "-p", str(port)])
    with running_wayback(command, tmp_path, port) as base:
        page = httpx.get(f"{base}/rendered/{timestamp}id_/{home}", timeout=15)
    assert page.status_code == 200, page.text[:500]
    assert b'<a href="/articles/1">' in page.content and b"never sent as HTML" in page.content


def conversion_date(warc_files, url: str) -> str:
    """The WARC-Date of `url`'s rendered DOM (its conversion record)."""
    for path in warc_files:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "conversion" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    return record.rec_headers.get_header("WARC-Date")
    raise AssertionError(f"no conversion record of {url}")

