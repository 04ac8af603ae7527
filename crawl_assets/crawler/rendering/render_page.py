"""Render one page: open it in one of the pool's tabs (browser.py: nothing of the page before
it left there), every request of it answered by the crawler (PoliteFetcher), or refused; let its scripts run until the network is quiet, scroll to
its end and press its "load more" buttons a few rounds (content a user gets by scrolling or by
asking: infinite scroll, a button), and keep the DOM. The page's own document is served from the
plain fetch's answer when there is one, so rendering asks the host for the page only once.
Images, media and fonts are not loaded: they cannot change the text or the links, and each
would be a request to the host and a record in the archive. The browser asks for no image at
all (browser.py); a video or a font it asks for is refused here as "media".

timeout_s bounds the whole page, its scripts and clicks included: a page whose requests never
quiet down (polling) is kept as it stands when the time is up; one whose scripts never yield
(a busy loop: the DOM cannot even be read) is abandoned STOP_GRACE_S later as an error, so no
page can hold the render pass."""

from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..content.decoding import DecodingError, decode_body
from ..fetching.http_exchange import HopResult
from .browser import BrowserPool
from .polite_fetch import PoliteFetcher, Refusal

# Headers that describe the bytes as sent: the browser gets the decoded body.
BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# Presses the first visible button whose label has the word "more" ("Load more", "Show more",
# "More"); whether there was one. Run in the page's own world: Playwright's selector engine
# (get_by_role) would be injected and compiled into every page rendered, a large part of its CPU.
PRESS_MORE = """() => {
  const more = /\\bmore\\b/i;
  const button = [...document.querySelectorAll('button, [role=button], input[type=button], input[type=submit]')]
    .find(b => more.test(b.innerText || b.value || b.getAttribute('aria-label') || '') && b.getClientRects().length
               && !b.disabled);
  if (!button) { return false; }
  button.scrollIntoView({block: 'center'});
  button.click();
  return true;
}"""
# The page as HTML, its doctype included (what page.content() gives, without Playwright's
# injected script).
DOM_HTML = """() => (document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')
  + document.documentElement.outerHTML"""
NOT_LOADED = frozenset({"image", "media", "font"})  # Playwright's resource types the text and links never need
QUIET_S = 0.3  # a page has settled when no request was in flight for this long
STOP_GRACE_S = 5.0  # past its timeout, a page that cannot give its DOM is abandoned
SCROLL_NOTICE_S = 0.1  # a scroll that starts no request within this long loaded nothing
# Scrolls to the end and returns the page's height; null when the end is in view already (what
# scrolling would load, an observer in view loaded with the page).
SCROLL_TO_END = "() => { const end = document.documentElement.scrollHeight; " \
                "if (window.scrollY + window.innerHeight >= end) { return null; } " \
                "window.scrollTo(0, end); return end; }"
PAGE_HEIGHT = "() => document.documentElement.scrollHeight"


@dataclass
class Rendered:
    url: str
    dom: str = ""
    requests: list[str] = field(default_factory=list)  # URLs the browser asked for, answered
    refused: list[Refusal] = field(default_factory=list)
    error: str | None = None


def _fulfilment(hop: HopResult, limit: int) -> dict:
    exchange = hop.exchange
    try:
        body = decode_body(exchange.body, hop.header("content-encoding"), limit)[0]
    except DecodingError:
        body = b""
    headers = {k: v for k, v in exchange.response_headers if k.lower() not in BODY_HEADERS}
    return {"status": exchange.status, "headers": headers, "body": body}


class Traffic:
    """The browser's requests in flight, and when the last one ended. Waiting is on events: a
    waiter wakes when a request starts or ends, or when its time is up, never to poll."""

    def __init__(self):
        self.in_flight, self.last = 0, time.monotonic()
        self.started = 0  # requests started so far
        self._moved = asyncio.Event()  # set when a request starts or ends

    @contextmanager
    def one(self):
        self.in_flight += 1
        self.started += 1
        self._moved.set()
        try:
            yield
        finally:
            self.in_flight -= 1
            self.last = time.monotonic()
            self._moved.set()

    async def moved(self, timeout_s: float) -> bool:
        """Wait at most timeout_s for a request to start or end; whether one did. (The caller
        reads the state it waits on before calling, with no await in between.)"""
        self._moved.clear()
        try:
            async with asyncio.timeout(max(timeout_s, 0.0)):
                await self._moved.wait()
        except TimeoutError:
            return False
        return True

    async def settled(self, timeout_s: float) -> None:
        """Wait until nothing was in flight for QUIET_S (counted from now at the earliest)."""
        self.last = max(self.last, time.monotonic())
        deadline = time.monotonic() + timeout_s
        while (now := time.monotonic()) < deadline:
            if self.in_flight:
                await self.moved(deadline - now)
            elif now - self.last >= QUIET_S:
                return
            else:
                await self.moved(min(self.last + QUIET_S, deadline) - now)


async def render_page(pool: BrowserPool, fetcher: PoliteFetcher, url: str, document: HopResult | None,
                      timeout_s: float, clicks: int) -> Rendered:
    result = Rendered(url)
    limit = fetcher.settings.max_body_bytes
    traffic = Traffic()

    async def answer(route) -> None:
        with traffic.one():
            await serve(route)

    async def serve(route) -> None:
        nonlocal document
        request = route.request
        if request.method != "GET" or not request.url.startswith(("http://", "https://")):
            result.refused.append(Refusal(request.url, "not_a_get"))
            await route.abort("blockedbyclient")
            return
        if request.resource_type in NOT_LOADED:
            result.refused.append(Refusal(request.url, "media"))
            await route.abort("blockedbyclient")
            return
        if document is not None and request.url == url:
            hop, document = document, None  # the plain fetch's answer, served once
        else:
            hop = await fetcher.fetch(request.url)
        if isinstance(hop, Refusal) or hop.exchange is None:
            result.refused.append(hop if isinstance(hop, Refusal) else Refusal(request.url, "unreachable"))
            await route.abort("blockedbyclient")
            return
        result.requests.append(request.url)
        await route.fulfill(**_fulfilment(hop, limit))

    deadline = time.monotonic() + timeout_s

    def left_s() -> float:
        return deadline - time.monotonic()

    async def run_page(page) -> None:
        await page.goto(url, wait_until="load")
        await traffic.settled(left_s())
        for _ in range(clicks):  # a round: scrolled to the end, then "load more" pressed
            if left_s() <= 0:
                break
            scrolled = await scroll_to_end(page, traffic, left_s)
            if left_s() > 0 and await page.evaluate(PRESS_MORE):
                await traffic.settled(left_s())
            elif not scrolled:
                break
        result.dom = await page.evaluate(DOM_HTML)

    try:
        async with pool.page(answer) as page:
            page.set_default_timeout(timeout_s * 1000)
            await asyncio.wait_for(run_page(page), timeout_s + STOP_GRACE_S)
    except asyncio.TimeoutError:
        result.error = f"the page gave no DOM within {timeout_s + STOP_GRACE_S:g} s (its scripts never yielded)"
    except Exception as exc:  # noqa: BLE001 - a page that cannot render is recorded as such
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return result


async def scroll_to_end(page, traffic: Traffic, left_s) -> bool:
    """Scroll to the page's end and wait for what that loads (an infinite scroll's next part);
    whether it loaded anything (a request started, or the page grew)."""
    started = traffic.started
    height = await page.evaluate(SCROLL_TO_END)
    if height is None:
        return False
    if traffic.started == started:
        await traffic.moved(SCROLL_NOTICE_S)  # a request the scroll starts ends the wait at once
    if traffic.started == started and await page.evaluate(PAGE_HEIGHT) == height:
        return False
    await traffic.settled(left_s())
    return True
