"""No page holds the render pass (crawler/rendering/render_page.py): render_timeout_s bounds the
whole page, its clicks included. A page that polls forever behind an endless "Load more"
button is kept as it stands when the time is up; one whose script never yields after its load
event (its DOM cannot even be read) is given up as an error. The page is served from a plain
answer and its other requests refused by a stand-in fetcher: no server, one chromium start."""

import asyncio
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from crawl_assets.crawler.archive.warc import Exchange
from crawl_assets.crawler.fetching.http_exchange import HopResult
from crawl_assets.crawler.rendering.browser import BrowserPool
from crawl_assets.crawler.rendering.polite_fetch import Refusal
from crawl_assets.crawler.rendering import render_page as render_page_module
from crawl_assets.crawler.rendering.render_page import render_page

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

TIMEOUT_S = 2.0
STOP_GRACE_S = 1.0  # the module's grace, shortened for the test
CLICKS = 5  # unbounded, the polling page would take (1 + CLICKS) * TIMEOUT_S and more
POLLING = """<p id="marker">polling</p><button id="more">Load more</button><script>
setInterval(function () { fetch('/poll').catch(function () {}); }, 100);
document.getElementById('more').addEventListener('click', function () {
  var p = document.createElement('p'); p.textContent = 'loaded'; document.body.appendChild(p);
});
</script>"""
BUSY = """<p id="marker">busy</p><script>
window.addEventListener('load', function () { setTimeout(function () { for (;;) {} }, 50); });
</script>"""


def plain_answer(url: str, html: str) -> HopResult:
    now = datetime.now(timezone.utc)
    body = f"<!DOCTYPE html><html><body>{html}</body></html>".encode()
    exchange = Exchange(url, "127.0.0.1", now, "GET", "/", [], "HTTP/1.1", 200, "OK",
                        [("Content-Type", "text/html")], body)
    return HopResult(url, now, exchange=exchange, headers={"content-type": "text/html"})


class RefusingFetcher:
    """Every request but the page's own is refused, as robots.txt might."""

    settings = SimpleNamespace(max_body_bytes=1 << 20)

    def __init__(self):
        self.asked: list[str] = []

    async def fetch(self, url: str) -> Refusal:
        self.asked.append(url)
        return Refusal(url, "robots")


def test_a_page_that_never_settles_or_never_yields_is_bounded_by_its_timeout(monkeypatch):
    monkeypatch.setattr(render_page_module, "STOP_GRACE_S", STOP_GRACE_S)
    fetcher = RefusingFetcher()

    async def render_both():
        outcomes = {}
        async with BrowserPool("/usr/bin/chromium", 2) as pool:
            for name, html in (("polling", POLLING), ("busy", BUSY)):
                url = f"http://{name}.demo.test/"
                started = time.monotonic()
                rendered = await render_page(pool, fetcher, url, plain_answer(url, html), TIMEOUT_S, CLICKS)
                outcomes[name] = (rendered, time.monotonic() - started)
        return outcomes

    outcomes = asyncio.run(render_both())
    polling, polling_s = outcomes["polling"]
    assert polling.error is None and 'id="marker">polling' in polling.dom
    assert "http://polling.demo.test/poll" in fetcher.asked  # it did poll, and never went quiet
    assert polling_s < TIMEOUT_S + STOP_GRACE_S  # one timeout for the page, not one per wait
    busy, busy_s = outcomes["busy"]
    assert busy.dom == "" and "never yielded" in busy.error
    assert busy_s < 2 * (TIMEOUT_S + STOP_GRACE_S)  # given up, its context closed
