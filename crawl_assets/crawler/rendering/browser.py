"""Headless Debian Chromium driven by Playwright (never a downloaded browser): one browser for
a render pass, a fresh context per page (no cookies or storage carried between pages), at
most render_pool_size pages at once. Every request of a context is routed to the crawler
(render_page.py); the flags keep Chromium from reaching any network of its own accord.

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

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")


def sealing_args(refusing_port: int) -> list[str]:
    """The flags that send every connection Chromium opens itself to 127.0.0.1:refusing_port."""
    return [f"--proxy-server=http://127.0.0.1:{refusing_port}", "--proxy-bypass-list=<-loopback>",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--webrtc-ip-handling-policy=disable_non_proxied_udp"]


class BrowserPool:
    def __init__(self, executable: str, size: int):
        self.executable, self.size = executable, size
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

    @asynccontextmanager
    async def context(self):
        """A fresh browser context, holding one of the pool's slots while it is open."""
        async with self._slots:
            context = await self._browser.new_context(service_workers="block")
            try:
                yield context
            finally:
                await context.close()
