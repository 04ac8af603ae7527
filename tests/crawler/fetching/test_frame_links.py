"""The frame-linked demo host (demoweb/special_hosts/frame_hosts.py) crawled whole by the fetch
step from its home page: its pages are reached through frames, an iframe, an image map, a
<link rel=next> and meta refreshes (one through a <base href>), its image is not fetched, and
URLs named only in a script or a comment are never requested. Loopback only."""

import dataclasses
import ipaddress

import pyarrow as pa

from crawl_assets.crawler.batches.arrow_schemas import FRONTIER_SCHEMA
from crawl_assets.crawler.settings import NetworkException, load_settings
from crawl_assets.crawler.vocabulary import StatusClass
from crawl_assets.pipeline.fetch_step import FetchInputs, run_fetch_step
from demoweb import DemoWebProcess
from demoweb.special_hosts.frame_hosts import frame_hosts


def test_a_crawl_from_the_home_page_fetches_every_page_of_the_frame_host(tmp_path):
    settings = dataclasses.replace(
        load_settings(use_env=False), default_delay_s=0.0, shard_count=1, max_pages_per_host=100,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))
    with DemoWebProcess(seed=3, hosts=1, pages_per_host=2, frames=True) as server:
        (host,) = frame_hosts(server.web)
        frontier = pa.Table.from_pylist([{"url": host.home, "host": host.hostname, "depth": 0, "priority": 1}],
                                        schema=FRONTIER_SCHEMA)
        result = run_fetch_step(settings, "s00", FetchInputs(frontier), tmp_path / "warc", "frames")
        rows = server.stop()
    requested = [f"http://{r['host']}:{server.web.port}{r['path']}" for r in rows if r["path"] != "/robots.txt"]
    assert sorted(requested) == sorted(host.pages)  # each page once; no image, nothing from scripts or comments

    log = {r["url"]: r for r in result.fetch_log.to_pylist()}
    assert set(log) == set(host.pages) and {r["status_class"] for r in log.values()} == {StatusClass.OK}
    found = {(link["source"], link["target"]) for link in result.links.to_pylist()}
    base = host.home.rstrip("/")
    assert {(host.home, base + "/frames/nav.html"), (base + "/frames/nav.html", base + "/map/south.html"),
            (base + "/map/south.html", base + "/deep/landing.html")} <= found
    assert not {target for _, target in found} & {*host.resources, *host.never_linked}
