"""The render tier's browser reaches no network of its own accord (crawler/rendering/browser.py):
a page served through the route asks Chromium for connections no route sees (a preconnect, a
DNS prefetch, WebSockets to a loopback address and to localhost, a WebRTC STUN server) and
for requests the route refuses; listeners on loopback, TCP and UDP, must see nothing. Without
the seal the preconnects alone reach the listener.

Each part of the seal is checked on its own, from what the browser itself did: its net log
(Chrome's --log-net-log) gives its proxy settings and every name it was asked to resolve, and
the page collects its WebRTC candidates. The resolver rule maps every host, the proxy's address
included, to "not found", so no socket opens at all: the proxy and the loopback rule are the
second wall, shown by the browser's own proxy settings. The page names only loopback addresses
and localhost; still, with the resolver rule and the proxy both gone Chromium asks the system's
DNS server for the page's own name and its update service's: try a broken seal in a network
namespace of its own (`unshare -n`, loopback up). One chromium start; loopback only."""

import asyncio
import json
import socket
import threading
import time
from pathlib import Path

import pytest

from crawl_assets.crawler.rendering import browser as browser_module
from crawl_assets.crawler.rendering.browser import BrowserPool

if not Path("/usr/bin/chromium").exists():
    pytest.skip("/usr/bin/chromium is missing (make system-packages installs it)", allow_module_level=True)
pytest.importorskip("playwright.async_api")

PAGE_URL = "http://sealed.demo.test/"
SETTLE_S = 1.5  # preconnects, sockets and ICE gathering start while the page parses; this is ample
# The test's own addition to the browser's flags (beside its net log): WebRTC host candidates
# under their addresses rather than mDNS names (no multicast, should the UDP rule go).
TEST_ARGS = ("--disable-features=WebRtcHideLocalIpsWithMdns",)


def page_asking_for(port: int) -> str:
    target = f"127.0.0.1:{port}"
    return f"""<!DOCTYPE html><html><head>
<link rel="preconnect" href="http://{target}"><link rel="preconnect" href="http://localhost:{port}">
<link rel="dns-prefetch" href="//prefetch.localhost"></head><body><p id="marker">served</p>
<img src="http://{target}/image.png">
<script>
window.candidates = [];
function attempt(open) {{ try {{ open(); }} catch (e) {{}} }}
attempt(function () {{ new WebSocket('ws://{target}/live'); }});
attempt(function () {{ new WebSocket('ws://localhost:{port}/live'); }});
attempt(function () {{ fetch('http://{target}/api').catch(function () {{}}); }});
attempt(function () {{
  var peer = new RTCPeerConnection({{iceServers: [{{urls: 'stun:{target}'}}]}});
  peer.onicecandidate = function (e) {{ if (e.candidate) {{ window.candidates.push(e.candidate.candidate); }} }};
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


@pytest.fixture(scope="module")
def sealed_page(tmp_path_factory):
    """The page rendered once in a sealed browser: what the listeners saw, the URLs the route
    was asked for, the page's WebRTC candidates, the browser's net log and its refusing port."""
    netlog = tmp_path_factory.mktemp("netlog") / "netlog.json"
    listeners = Listeners()
    routed: list[str] = []
    flags = browser_module.CHROMIUM_ARGS
    browser_module.CHROMIUM_ARGS = (*flags, *TEST_ARGS, f"--log-net-log={netlog}")

    async def render() -> tuple[str, list[str], int]:
        async def route(route):
            routed.append(route.request.url)
            if route.request.url == PAGE_URL:
                await route.fulfill(status=200, headers={"content-type": "text/html"},
                                    body=page_asking_for(listeners.port))
            else:
                await route.abort("blockedbyclient")

        async with BrowserPool("/usr/bin/chromium", 1) as pool, pool.page(route) as page:
            await page.goto(PAGE_URL)
            await asyncio.sleep(SETTLE_S)
            return (await page.inner_text("#marker"), await page.evaluate("window.candidates"),
                    pool.refusing_port)

    try:
        marker, candidates, refusing_port = asyncio.run(render())
        time.sleep(0.2)  # a connection accepted at the last moment is recorded
    finally:
        browser_module.CHROMIUM_ARGS = flags
        listeners.close()
    log = json.loads(netlog.read_text())  # written whole when the browser closes
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    events = [(names[event["type"]], event.get("params", {})) for event in log["events"]]
    return {"marker": marker, "reached": listeners.reached, "routed": routed, "port": listeners.port,
            "candidates": candidates, "events": events, "refusing_port": refusing_port}


def test_the_browser_opens_no_connection_the_crawler_does_not_make(sealed_page):
    assert sealed_page["marker"] == "served"
    assert sealed_page["reached"] == []
    # The requests were the route's to answer: asked, and refused there (an image is never
    # asked for: the browser loads none).
    assert f"http://127.0.0.1:{sealed_page['port']}/api" in sealed_page["routed"]
    assert f"http://127.0.0.1:{sealed_page['port']}/image.png" not in sealed_page["routed"]


def test_every_connection_goes_to_the_refusing_proxy_loopback_included(sealed_page):
    """The proxy part (--proxy-server) and the loopback part (Chromium bypasses any proxy for
    loopback addresses unless told "<-loopback>"), as the browser took them."""
    configs = [params["new_config"] for name, params in sealed_page["events"] if name == "PROXY_CONFIG_CHANGED"]
    assert configs, "the browser logged no proxy settings"
    for config in configs:
        assert config.get("single_proxy") == [f"[127.0.0.1:{sealed_page['refusing_port']}]"], config
        assert "<-loopback>" in config.get("bypass_list", []), config


def test_the_browser_resolves_no_name(sealed_page):
    """The resolver part: every host the browser would resolve (the proxy's address, the
    preconnects, localhost) is mapped to ~NOTFOUND before any resolver runs."""
    events = sealed_page["events"]
    asked = {params["host"] for name, params in events if name == "HOST_RESOLVER_MANAGER_REQUEST" and "host" in params}
    assert asked and all(host.endswith("://~notfound") for host in asked), asked
    assert not [name for name, _ in events if name in ("HOST_RESOLVER_DNS_TASK", "HOST_RESOLVER_SYSTEM_TASK")]


def test_webrtc_gathers_no_udp_candidate(sealed_page):
    """The WebRTC part: no UDP but through the proxy, which carries none: the page gathers no
    UDP candidate, and its STUN server on loopback gets no datagram."""
    assert [c for c in sealed_page["candidates"] if " udp " in c.lower()] == []
    assert "udp datagram" not in sealed_page["reached"]
