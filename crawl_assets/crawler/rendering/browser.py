"""Headless Debian Chromium driven by Playwright (never a downloaded browser): one browser for
a render pass, at most render_pool_size pages at once, each in a tab of its own context that
renders page after page: a new context and page for each would start a renderer process for
each, most of a page's CPU. A page carries nothing to the next (its cookies and storage are
cleared after it), and a tab whose page failed is closed. Every request of a context is
routed to the crawler (render_page.py); the flags keep Chromium from reaching any network of
its own accord.

Routing sees requests, not connections: a page's <link rel=preconnect>, a WebSocket, DNS
prefetching or WebRTC would reach the network around the crawler (its address guard and its
politeness included). So the browser is sealed: every connection it would make itself goes to
a proxy address that refuses it (a loopback port this process holds bound and never listens
on, loopback addresses not exempt), it resolves no name (the crawler resolves the ones it
fetches), and WebRTC may use no UDP but through that proxy."""

from __future__ import annotations

import asyncio
import socket
from contextlib import asynccontextmanager

# What Playwright sets for a headless Chromium (its chromium.ts), kept beside ours.
PLAYWRIGHT_HEADLESS_BLINK_SETTINGS = ("primaryHoverType=2", "availableHoverTypes=2", "primaryPointerType=4",
                                      "availablePointerTypes=4")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 # A tab renders one site's page after another's: with site isolation each change
                 # of site would start a renderer process (a sixth of a page's CPU). Nothing
                 # across sites needs keeping apart: no page has cookies or storage of another.
                 "--disable-site-isolation-trials",
                 # No image is loaded (an <img>, a CSS background): one cannot change the text or
                 # the links, and each was a request routed to the crawler and refused. Chromium
                 # keeps the last --blink-settings: Playwright's own for headless come first.
                 "--blink-settings=" + ",".join((*PLAYWRIGHT_HEADLESS_BLINK_SETTINGS, "imagesEnabled=false")))


def sealing_args(refusing_port: int) -> list[str]:
    """The flags that send every connection Chromium opens itself to 127.0.0.1:refusing_port."""
    return [f"--proxy-server=http://127.0.0.1:{refusing_port}", "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--webrtc-ip-handling-policy=disable_non_proxied_udp"]


class Tab:
    """One of the pool's slots: a browser context with one page in it, which renders page after
    page. Every request of the context goes to `handler` (set for each page rendered; between
    pages every request is refused)."""

    def __init__(self, context, page):
        self.context, self.page = context, page
        self.handler = refuse_all

    async def route(self, route) -> None:
        await self.handler(route)


async def refuse_all(route) -> None:
    await route.abort("blockedbyclient")


# Run in the page just rendered: what it stored for its origin goes with it.
FORGET_STORAGE = "() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }"


class BrowserPool:
    def __init__(self, executable: str, size: int):
        self.executable, self.size = executable, size
        self._idle: list[Tab] = []
        self._slots = asyncio.Semaphore(size)
        self._playwright = self._browser = None
        self._refusing: socket.socket | None = None  # bound, never listening: connections refused

    async def __aenter__(self) -> "BrowserPool":
        from playwright.async_api import async_playwright  # noqa: PLC0415 - only a render pass needs it

        self._refusing = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._refusing.bind(("127.0.0.1", 0))  # held for the browser's life: nothing else can listen there
        self._playwright = await async_playwright().start()
        # Playwright gives the browser a new empty profile of its own (it refuses --user-data-dir).
        args = [*CHROMIUM_ARGS, *sealing_args(self.refusing_port)]
        self._browser = await self._playwright.chromium.launch(executable_path=self.executable, args=args)
        return self

    @property
    def refusing_port(self) -> int:
        """The loopback port every connection of the browser's own is sent to, and refused."""
        return self._refusing.getsockname()[1]

    async def __aexit__(self, *exc) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._playwright is not None:
            await self._playwright.stop()
        if self._refusing is not None:
            self._refusing.close()

    async def _new_tab(self) -> Tab:
        context = await self._browser.new_context(service_workers="block")
        tab = Tab(context, None)
        await context.route("**/*", tab.route)
        tab.page = await context.new_page()
        return tab

    @asynccontextmanager
    async def page(self, handler):
        """A page to render in, its requests answered by `handler(route)`, holding one of the
        pool's slots. A page is reused: after it, its cookies and storage are cleared; one that
        raised (a page whose scripts never yielded among them) is closed with its context."""
        async with self._slots:
            tab = self._idle.pop() if self._idle else await self._new_tab()
            tab.handler = handler
            try:
                yield tab.page
            except BaseException:
                await tab.context.close()
                raise
            tab.handler = refuse_all
            try:
                await tab.page.evaluate(FORGET_STORAGE)
                await tab.context.clear_cookies()
            except Exception:  # noqa: BLE001 - a tab that cannot be reset is not reused
                await tab.context.close()
                return
            self._idle.append(tab)
