"""The render tier's browser reaches no network of its own accord (crawler/rendering/browser.py):
a page served through the route asks Chromium for connections no route sees (a preconnect, a
DNS prefetch, WebSockets to a loopback address and to localhost, a WebRTC STUN server) and
for requests the route refuses; listeners on loopback, TCP and UDP, must see nothing. Without
the seal the preconnects alone reach the listener. One chromium start; loopback only."""

import asyncio
import socket
import threading
import time
from pathlib import Path

import pytest

from crawl_assets.crawler.rendering.browser import BrowserPool

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

PAGE_URL = "http://sealed.demo.test/"
SETTLE_S = 1.5  # preconnects and sockets start while the page parses; this is ample


def page_asking_for(port: int) -> str:
    target = f"127.0.0.1:{port}"
    return f"""<!DOCTYPE html><html><head>
<link rel="preconnect" href="http://{target}"><link rel="preconnect" href="http://localhost:{port}">
<link rel="dns-prefetch" href="//prefetch.demo.test"></head><body><p id="marker">served</p>
<img src="http://{target}/image.png">
<script>
function attempt(open) {{ try {{ open(); }} catch (e) {{}} }}
attempt(function () {{ new WebSocket('ws://{target}/live'); }});
attempt(function () {{ new WebSocket('ws://localhost:{port}/live'); }});
attempt(function () {{ fetch('http://{target}/api').catch(function () {{}}); }});
attempt(function () {{
  var peer = new RTCPeerConnection({{iceServers: [{{urls: 'stun:{target}'}}]}});
  peer.createDataChannel('x');
  peer.createOffer().then(function (offer) {{ return peer.setLocalDescription(offer); }});
}});
</script></body></html>"""


class Listeners:
    """A TCP and a UDP socket on one loopback port, recording whatever reaches them."""

    def __init__(self):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.reached: list[str] = []
        for target in (self._accept, self._receive):
            threading.Thread(target=target, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                return
            self.reached.append("tcp connection")
            connection.close()

    def _receive(self):
        while True:
            try:
                self.udp.recvfrom(2048)
            except OSError:
                return
            self.reached.append("udp datagram")

    def close(self):
        self.tcp.close()
        self.udp.close()


def test_the_browser_opens_no_connection_the_crawler_does_not_make():
    listeners = Listeners()
    routed: list[str] = []

    async def render() -> str:
        async with BrowserPool("/usr/bin/chromium", 1) as pool, pool.context() as context:
            async def route(route):
                routed.append(route.request.url)
                if route.request.url == PAGE_URL:
                    await route.fulfill(status=200, headers={"content-type": "text/html"},
                                        body=page_asking_for(listeners.port))
                else:
                    await route.abort("blockedbyclient")

            await context.route("**/*", route)
            page = await context.new_page()
            await page.goto(PAGE_URL)
            await asyncio.sleep(SETTLE_S)
            return await page.inner_text("#marker")

    try:
        assert asyncio.run(render()) == "served"
        time.sleep(0.2)  # a connection accepted at the last moment is recorded
    finally:
        listeners.close()
    assert listeners.reached == []
    # The requests were the route's to answer: asked, and refused there.
    assert f"http://127.0.0.1:{listeners.port}/image.png" in routed
