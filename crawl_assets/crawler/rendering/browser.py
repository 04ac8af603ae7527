"""Headless Debian Chromium driven by Playwright (never a downloaded browser): one browser for
a render pass, a fresh context per page (no cookies or storage carried between pages), at
most render_pool_size pages at once. Every request of a context is routed to the crawler
(render_page.py); the flags keep Chromium from reaching any network of its own accord."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")


class BrowserPool:
    def __init__(self, executable: str, size: int):
        self.executable, self.size = executable, size
        self._slots = asyncio.Semaphore(size)
        self._playwright = self._browser = None

    async def __aenter__(self) -> "BrowserPool":
        from playwright.async_api import async_playwright  # noqa: PLC0415 - only a render pass needs it

        self._playwright = await async_playwright().start()
        # Playwright gives the browser a new empty profile of its own (it refuses --user-data-dir).
        self._browser = await self._playwright.chromium.launch(executable_path=self.executable,
                                                               args=list(CHROMIUM_ARGS))
        return self

    async def __aexit__(self, *exc) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._playwright is not None:
            await self._playwright.stop()

    @asynccontextmanager
    async def context(self):
        """A fresh browser context, holding one of the pool's slots while it is open."""
        async with self._slots:
            context = await self._browser.new_context(service_workers="block")
            try:
                yield context
            finally:
                await context.close()
