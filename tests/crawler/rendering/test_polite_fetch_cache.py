"""The browser's fetch path with its cache (crawler/rendering/polite_fetch.py and
subresource_cache.py) against the demo web's magazine sites, without a browser: a script with
a max-age is asked for once and archived once however often the pages ask; JSON answered with
no-cache and an ETag is asked for again conditionally, the 304 archived as a revisit of the
first answer and the stored body served; the host's delay holds for every request made. The
demo web's own log counts the requests. Loopback only."""

import asyncio
import dataclasses
import ipaddress

from warcio.archiveiterator import ArchiveIterator

from crawl_assets.crawler.archive.warc import SERVER_NOT_MODIFIED, WarcFileWriter
from crawl_assets.crawler.fetching.engine import FetchEngine
from crawl_assets.crawler.rendering.polite_fetch import PoliteFetcher
from crawl_assets.crawler.settings import NetworkException, load_settings
from demoweb import DemoWebProcess
from demoweb.special_hosts.spa_sites import spa_sites
from support import assert_polite

DELAY_S = 0.05


def test_the_cache_saves_requests_and_records_and_revalidates_what_it_must(tmp_path):
    settings = dataclasses.replace(
        load_settings(use_env=False), default_delay_s=DELAY_S, response_time_factor=0.0,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=2, spa_sites=True) as server:
        site = spa_sites(server.web)[0]
        app, story = site.home + "static/app.js", site.home + "api/story/3.json"
        with WarcFileWriter(tmp_path, "cache", "test") as warc:
            engine = FetchEngine(settings, warc, lambda host: True)
            fetcher = PoliteFetcher(settings, engine.exchanger, engine.recorder, engine.workbench.hosts,
                                    engine.clock, lambda host: True)

            async def ask() -> list:
                answers = [await fetcher.fetch(url) for url in (app, story, app, story)]
                answers += await asyncio.gather(*(fetcher.fetch(app) for _ in range(3)))  # pages at once
                await fetcher.close()
                return answers

            answers = asyncio.run(ask())
        rows = server.stop()
    asked = [(r["path"], r["status"]) for r in rows if r["path"] != "/robots.txt"]
    assert asked == [("/static/app.js", 200), ("/api/story/3.json", 200), ("/api/story/3.json", 304)]
    assert [a.status for a in answers] == [200] * 7
    assert answers[3].exchange.body == answers[1].exchange.body  # the stored JSON, after its 304
    assert (fetcher.cache.hits, fetcher.cache.revalidated, fetcher.requests - fetcher.robots_requests) == (4, 1, 3)
    assert_polite(rows, DELAY_S)
    records = []
    for path in warc.closed_files:
        with open(path, "rb") as stream:
            records += [(r.rec_type, r.rec_headers) for r in ArchiveIterator(stream) if r.rec_type != "request"]
    kinds = [(kind, h.get_header("WARC-Target-URI")) for kind, h in records if kind != "warcinfo"]
    assert kinds == [("response", app), ("response", story), ("revisit", story)]
    first, revisit = records[-2][1], records[-1][1]
    assert revisit.get_header("WARC-Profile") == SERVER_NOT_MODIFIED
    assert revisit.get_header("WARC-Refers-To-Target-URI") == story
    assert revisit.get_header("WARC-Refers-To-Date") == first.get_header("WARC-Date")
    assert revisit.get_header("WARC-Payload-Digest") == first.get_header("WARC-Payload-Digest")
