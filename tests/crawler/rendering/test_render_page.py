"""One page in the browser (crawler/rendering/render_page.py), served from a plain answer, its
other requests answered by a stand-in fetcher: no server, one chromium start for the module.

An infinite scroll's parts are loaded by scrolling to the end, round after round. No page holds
the render pass: render_timeout_s bounds the whole page, its rounds included. A page that polls
forever behind an endless "Load more" button is kept as it stands when the time is up; one
whose script never yields after its load event (its DOM cannot even be read) is given up as an
error."""

import asyncio
import json
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


def plain_answer(url: str, content: str, media_type: str = "text/html") -> HopResult:
    now = datetime.now(timezone.utc)
    body = (f"<!DOCTYPE html><html><body>{content}</body></html>" if media_type == "text/html" else content).encode()
    exchange = Exchange(url, "127.0.0.1", now, "GET", "/", [], "HTTP/1.1", 200, "OK",
                        [("Content-Type", media_type)], body)
    return HopResult(url, now, exchange=exchange, headers={"content-type": media_type})


@pytest.fixture(scope="module")
def browser():
    """A loop of the module's own, and one browser on it for every test."""
    loop = asyncio.new_event_loop()
    pool = BrowserPool("/usr/bin/chromium", 2)
    loop.run_until_complete(pool.__aenter__())
    yield lambda render: loop.run_until_complete(render(pool))
    loop.run_until_complete(pool.__aexit__(None, None, None))
    loop.close()


FEED_PARTS = 3
ENDLESS = """<style>li { height: 120px }</style><ul id="feed"></ul><p id="end">end</p><script>
var part = 0, loading = false;
function more() {
  if (loading || part === null) { return; }
  loading = true;
  fetch('/feed?part=' + part).then(function (r) { return r.json(); }).then(function (answer) {
    answer.links.forEach(function (href) {
      var li = document.createElement('li');
      li.innerHTML = '<a href="' + href + '">' + href + '</a>';
      document.getElementById('feed').appendChild(li);
    });
    part = answer.next; loading = false;
  });
}
new IntersectionObserver(function (seen) { if (seen[0].isIntersecting) { more(); } })
  .observe(document.getElementById('end'));
</script>"""


def feed_part(url: str) -> HopResult:
    """Part N of the endless feed: ten links, and the next part's number (null after the last)."""
    part = int(url.rsplit("=", 1)[1])
    links = [f"/story/{part}-{n}" for n in range(10)]
    following = part + 1 if part + 1 < FEED_PARTS else None
    return plain_answer(url, json.dumps({"links": links, "next": following}), "application/json")


class StandInFetcher:
    """The feed's parts are answered; every other request but the page's own is refused, as
    robots.txt might."""

    settings = SimpleNamespace(max_body_bytes=1 << 20)

    def __init__(self):
        self.asked: list[str] = []

    async def fetch(self, url: str) -> HopResult | Refusal:
        self.asked.append(url)
        return feed_part(url) if "/feed?part=" in url else Refusal(url, "robots")


def test_an_infinite_scroll_is_scrolled_to_its_end_part_after_part(browser):
    fetcher = StandInFetcher()
    url = "http://endless.demo.test/"
    rendered = browser(lambda pool: render_page(pool, fetcher, url, plain_answer(url, ENDLESS), 10.0, CLICKS))
    assert rendered.error is None
    assert [u for u in fetcher.asked if "/feed" in u] == [f"{url}feed?part={n}" for n in range(FEED_PARTS)]
    assert all(f'href="/story/{part}-9"' in rendered.dom for part in range(FEED_PARTS))


BUTTONED = """<ul id="feed"></ul><button id="more">Load more</button><button id="wipe">Clear list</button><script>
var part = 0;
document.getElementById('more').addEventListener('click', function () {
  fetch('/feed?part=' + part).then(function (r) { return r.json(); }).then(function (answer) {
    answer.links.forEach(function (href) {
      var li = document.createElement('li');
      li.innerHTML = '<a href="' + href + '">' + href + '</a>';
      document.getElementById('feed').appendChild(li);
    });
    part = answer.next;
    if (part === null) { document.getElementById('more').remove(); }
  });
});
document.getElementById('wipe').addEventListener('click', function () {
  document.getElementById('feed').innerHTML = '<li>wi' + 'ped</li>';
});
</script>"""


@pytest.mark.parametrize("clicks", [CLICKS, 2])
def test_load_more_is_pressed_round_after_round_up_to_the_clicks(browser, clicks):
    """A page whose items come only by pressing "Load more" (no scrolling loads them): each
    round presses it once, until the button is gone or `clicks` rounds are done; a button of
    another name is never pressed."""
    fetcher = StandInFetcher()
    url = "http://buttons.demo.test/"
    rendered = browser(lambda pool: render_page(pool, fetcher, url, plain_answer(url, BUTTONED), 10.0, clicks))
    assert rendered.error is None
    pressed = min(clicks, FEED_PARTS)
    assert [u for u in fetcher.asked if "/feed" in u] == [f"{url}feed?part={n}" for n in range(pressed)]
    assert all(f'href="/story/{part}-9"' in rendered.dom for part in range(pressed))
    assert "wiped" not in rendered.dom


def test_a_page_that_never_settles_or_never_yields_is_bounded_by_its_timeout(browser, monkeypatch):
    monkeypatch.setattr(render_page_module, "STOP_GRACE_S", STOP_GRACE_S)
    fetcher = StandInFetcher()

    async def render_both(pool):
        outcomes = {}
        for name, html in (("polling", POLLING), ("busy", BUSY)):
            url = f"http://{name}.demo.test/"
            started = time.monotonic()
            rendered = await render_page(pool, fetcher, url, plain_answer(url, html), TIMEOUT_S, CLICKS)
            outcomes[name] = (rendered, time.monotonic() - started)
        return outcomes

    outcomes = browser(render_both)
    polling, polling_s = outcomes["polling"]
    assert polling.error is None and 'id="marker">polling' in polling.dom
    assert "http://polling.demo.test/poll" in fetcher.asked  # it did poll, and never went quiet
    assert polling_s < TIMEOUT_S + STOP_GRACE_S  # one timeout for the page, not one per wait
    busy, busy_s = outcomes["busy"]
    assert busy.dom == "" and "never yielded" in busy.error
    assert busy_s < 2 * (TIMEOUT_S + STOP_GRACE_S)  # given up, its context closed


MEDIA = """<img src="/logo.png"><video src="/intro.mp4" autoplay muted></video>
<style>@font-face { font-family: F; src: url(/f.woff2); } p { font-family: F }</style>
<p id="marker">media</p><script src="/app.js"></script>"""
REMEMBERS = """<p id="seen"></p><script>
document.getElementById('seen').textContent =
  'cookie=' + document.cookie + ';stored=' + localStorage.getItem('visited') + ';session=' + sessionStorage.getItem('visited');
document.cookie = 'visited=yes; path=/'; localStorage.setItem('visited', 'yes'); sessionStorage.setItem('visited', 'yes');
</script>"""


def test_images_media_and_fonts_are_not_asked_for(browser):
    fetcher = StandInFetcher()
    url = "http://media.demo.test/"
    rendered = browser(lambda pool: render_page(pool, fetcher, url, plain_answer(url, MEDIA), 5.0, 0))
    assert rendered.error is None and 'id="marker">media' in rendered.dom
    assert fetcher.asked == [url + "app.js"]  # the script only: it could write text or links
    refused = {r.url: r.reason for r in rendered.refused}
    assert refused[url + "intro.mp4"] == "media" and url + "logo.png" not in refused  # no image asked for


def test_a_page_finds_nothing_the_page_rendered_before_it_left(browser):
    """A tab renders page after page; the cookies and storage one page set are gone for the next,
    of the same site (the pool is two tabs; the renders one after another reuse one of them)."""
    fetcher = StandInFetcher()

    async def render_twice(pool):
        pages = []
        for path in ("one", "two"):
            url = f"http://remembers.demo.test/{path}"
            pages.append(await render_page(pool, fetcher, url, plain_answer(url, REMEMBERS), 5.0, 0))
        return pages

    first, second = browser(render_twice)
    assert first.error is None and second.error is None
    for rendered in (first, second):
        assert 'id="seen">cookie=;stored=null;session=null<' in rendered.dom
