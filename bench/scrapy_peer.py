"""Scrapy crawling the demo web: the peer our fetch engine is compared with in fetch_engine.py.

    python bench/scrapy_peer.py --seeds-file seeds.txt --concurrency 256 --delay 0.01 \
        --port 8471 --stats-out stats.json [--depth-limit 16] [--max-pages N] [--timeout S]

One process with one CrawlerProcess, as Scrapy runs (a reactor starts once per process, so
fetch_engine.py starts this script once per run). The spider is a CrawlSpider following
every link on *.demo.test from the seeds (home pages), with the settings a polite broad
crawl would use: CONCURRENT_REQUESTS = --concurrency, one request at a time per host,
DOWNLOAD_DELAY = --delay without jitter, robots.txt obeyed, no AutoThrottle, no item
pipelines, no cookies. Scrapy does not honour robots.txt Crawl-delay; our engine does.

Network: only the demo web. netguard refuses any connection but 127.0.0.1:--port and any
system name lookup; DemoResolver (installed as Scrapy's DNS resolver) answers *.demo.test
with 127.0.0.1 and refuses every other name; allowed_domains and the link extractor keep
the crawl on http://*.demo.test:--port/; the telnet console and Scrapy 2.19's
remote-control HTTP server are off, and so are cookies (the cookie middleware's
tldextract would otherwise fetch the public suffix list from the internet).

--stats-out gets JSON: wall_s and cpu_s from spider_opened to spider_closed, max_rss_kb
(whole process, VmHWM), pages (responses with status 200), page_keys ("host/path" of each),
t95_s (seconds until 95 % of them had arrived), host_span_s (median over hosts of first
to last page), mean_latency_ms (Scrapy's download_latency), and a few of Scrapy's own
stats counters.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import netguard  # noqa: E402
from measures import median_host_span, peak_rss_kb, time_to_fraction  # noqa: E402

DEMO_DOMAIN = "demo.test"
LOOPBACK = "127.0.0.1"
STATS_KEPT = ("downloader/request_count", "downloader/response_count", "downloader/exception_count",
              "retry/count", "robotstxt/request_count", "robotstxt/forbidden",
              "response_received_count", "finish_reason", "offsite/filtered", "dupefilter/filtered",
              "request_depth_max")


def is_demo_host(name: str | bytes) -> bool:
    if isinstance(name, bytes):
        name = name.decode("ascii", "replace")
    name = name.lower().rstrip(".")
    return name.endswith("." + DEMO_DOMAIN)


def build_resolver_class():
    """DemoResolver, defined once Twisted is importable (it is: Scrapy depends on it)."""
    from scrapy.resolver import HostResolution
    from twisted.internet import defer
    from twisted.internet.address import IPv4Address
    from twisted.internet.error import DNSLookupError
    from twisted.internet.interfaces import IHostnameResolver, IResolverSimple
    from zope.interface import implementer

    @implementer(IResolverSimple, IHostnameResolver)
    class DemoResolver:
        """*.demo.test -> 127.0.0.1; every other name fails, without asking any DNS server.

        Installed as both of the reactor's resolvers: the simple one (connectTCP) and the
        name resolver (HostnameEndpoint), so no code path reaches the system resolver."""

        def __init__(self, reactor):
            self.reactor = reactor

        @classmethod
        def from_crawler(cls, crawler, reactor):
            return cls(reactor)

        def install_on_reactor(self) -> None:
            self.reactor.installResolver(self)
            self.reactor.installNameResolver(self)

        def getHostByName(self, name, timeout=()):
            if is_demo_host(name):
                return defer.succeed(LOOPBACK)
            return defer.fail(DNSLookupError(f"{name}: not a demo host; the benchmark resolves nothing else"))

        def resolveHostName(self, resolutionReceiver, hostName, portNumber=0, addressTypes=None,
                            transportSemantics="TCP"):
            resolution = HostResolution(hostName)
            resolutionReceiver.resolutionBegan(resolution)
            if is_demo_host(hostName):
                resolutionReceiver.addressResolved(IPv4Address("TCP", LOOPBACK, portNumber))
            resolutionReceiver.resolutionComplete()  # no address: the connection fails
            return resolution

    return DemoResolver


def build_spider_class(port: int):
    from scrapy import Request
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule

    # Not allow_domains: LinkExtractor compares it with host:port, so it never matches here.
    demo_links = LinkExtractor(allow=(rf"^http://[a-z0-9-]+\.{re.escape(DEMO_DOMAIN)}:{port}/",))

    class DemoSpider(CrawlSpider):
        name = "demo"
        allowed_domains = [DEMO_DOMAIN]
        rules = (Rule(demo_links, callback="parse_page", follow=True),)

        def __init__(self, seeds: list[str], **kwargs):
            super().__init__(**kwargs)
            self.start_urls = seeds
            self.page_keys: list[str] = []
            self.statuses: Counter[int] = Counter()
            self.latency_sum_s = 0.0
            self.page_times: list[tuple[str, float]] = []  # (host, time.monotonic()) per page

        # Seeds go through the duplicate filter too (Scrapy's default start requests skip
        # it), so a home page is not fetched a second time when a link leads back to it.
        async def start(self):  # Scrapy >= 2.13
            for request in self.start_requests():
                yield request

        def start_requests(self):  # older Scrapy
            for url in self.start_urls:
                yield Request(url)

        def parse_start_url(self, response):
            return self.parse_page(response)

        def parse_page(self, response):
            # Only counted here: robots.txt responses never reach the spider.
            self.statuses[response.status] += 1
            self.latency_sum_s += response.meta.get("download_latency", 0.0)
            if response.status == 200:
                parts = urlsplit(response.url)
                self.page_keys.append(f"{parts.hostname}{parts.path}")
                self.page_times.append((parts.hostname, time.monotonic()))
            return ()

    return DemoSpider


def scrapy_settings(args: argparse.Namespace, resolver_class) -> dict:
    from scrapy.settings import default_settings

    settings = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "CONCURRENT_REQUESTS_PER_IP": 0,  # every demo host is 127.0.0.1: limit per host, not IP
        "DOWNLOAD_DELAY": args.delay,
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": args.depth_limit,
        "ITEM_PIPELINES": {},
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,  # Scrapy >= 2.19 would open an HTTP control server
        "LOG_LEVEL": "WARNING",
        "USER_AGENT": "recrawl-bench-scrapy/0.1",
        "DOWNLOAD_TIMEOUT": 30,  # our engine's fetch_timeout_s
        # Safety bounds: a benchmark run never goes on past these.
        "CLOSESPIDER_PAGECOUNT": args.max_pages,
        "CLOSESPIDER_TIMEOUT": args.timeout,
    }
    # Scrapy 2.13 renamed RANDOMIZE_DOWNLOAD_DELAY (jitter 0.5 or 0) and DNS_RESOLVER.
    if hasattr(default_settings, "DOWNLOAD_DELAY_JITTER"):
        settings["DOWNLOAD_DELAY_JITTER"] = 0
    else:
        settings["RANDOMIZE_DOWNLOAD_DELAY"] = False
    resolver_key = "TWISTED_DNS_RESOLVER" if hasattr(default_settings, "TWISTED_DNS_RESOLVER") else "DNS_RESOLVER"
    settings[resolver_key] = resolver_class
    return settings


class Meter:
    """Wall and CPU time from spider_opened to spider_closed."""

    def __init__(self):
        self.opened = self.closed = 0.0
        self.cpu_opened = self.cpu_closed = 0.0

    @staticmethod
    def _cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def spider_opened(self, spider):
        self.opened, self.cpu_opened = time.monotonic(), self._cpu()

    def spider_closed(self, spider, reason):
        self.closed, self.cpu_closed = time.monotonic(), self._cpu()


def crawl(args: argparse.Namespace) -> dict:
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    seeds = [line.strip() for line in Path(args.seeds_file).read_text().splitlines() if line.strip()]
    bad = [u for u in seeds if not is_demo_host(urlsplit(u).hostname or "")]
    if bad:
        raise SystemExit(f"scrapy_peer: seeds outside {DEMO_DOMAIN}: {bad[:3]}")

    process = CrawlerProcess(scrapy_settings(args, build_resolver_class()))
    crawler = process.create_crawler(build_spider_class(args.port))
    meter = Meter()
    crawler.signals.connect(meter.spider_opened, signal=signals.spider_opened)
    crawler.signals.connect(meter.spider_closed, signal=signals.spider_closed)
    process.crawl(crawler, seeds=seeds)
    process.start()

    spider, stats = crawler.spider, crawler.stats.get_stats()
    return {
        "wall_s": meter.closed - meter.opened,
        "cpu_s": meter.cpu_closed - meter.cpu_opened,
        "max_rss_kb": peak_rss_kb(),
        "pages": len(spider.page_keys),
        "page_keys": spider.page_keys,
        "t95_s": time_to_fraction([t - meter.opened for _, t in spider.page_times]),
        "host_span_s": median_host_span(spider.page_times),
        "mean_latency_ms": 1000 * spider.latency_sum_s / max(1, sum(spider.statuses.values())),
        "statuses": {str(k): v for k, v in sorted(spider.statuses.items())},
        "response_statuses": {k.rsplit("/", 1)[1]: v for k, v in stats.items()
                              if k.startswith("downloader/response_status_count/")},
        "scrapy_stats": {k: stats[k] for k in STATS_KEPT if k in stats},
        "scrapy_version": __import__("scrapy").__version__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds-file", required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--delay", type=float, required=True)
    parser.add_argument("--port", type=int, required=True, help="the demo web's port on 127.0.0.1")
    parser.add_argument("--stats-out", required=True)
    parser.add_argument("--depth-limit", type=int, default=16, help="our engine's max_depth")
    parser.add_argument("--max-pages", type=int, default=100_000, help="safety bound")
    parser.add_argument("--timeout", type=float, default=600.0, help="safety bound, seconds")
    args = parser.parse_args(argv)
    netguard.install(args.port)  # before Scrapy is imported: nothing escapes it
    stats = crawl(args)
    Path(args.stats_out).write_text(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
