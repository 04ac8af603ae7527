"""The hostile hosts: their description, and that the server really misbehaves that way
(over real loopback sockets, with httpx and the Host header set)."""

from __future__ import annotations

import time
import urllib.robotparser
import zlib
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx
import pytest

from crawl_assets.crawler.content.links import extract_links
from demoweb import DemoWeb, DemoWebThread, HostileHost, add_hostile_hosts
from demoweb.process import DemoWebProcess
from demoweb.special_hosts.hostile_hosts import KINDS

STATUS_CLASSES = {"ok", "not_modified", "redirect", "redirect_loop", "too_many_redirects",
                  "http_4xx", "http_5xx", "throttled", "timeout", "too_large", "robots_disallowed",
                  "robots_unavailable", "deferred_crawl_delay", "connect_error", "network_error"}
MB = 1024 * 1024


@pytest.fixture(scope="module")
def demo():
    with DemoWebThread(DemoWeb(seed=3, hosts=3, pages_per_host=10, hostile=True), port=0) as thread:
        yield thread


@pytest.fixture(scope="module")
def hosts(demo) -> dict[str, HostileHost]:
    return {h.kind: h for h in demo.web.hostile_hosts()}


def logged_rows(demo, host: str, count: int, since: float, timeout: float = 5.0):
    """Access-log rows of `host` for requests started after `since`, once there are `count`.
    A streamed or hanging response is logged only when it ends (the client went away)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = [row for row in demo.access_log.rows if row.host == host and row.start >= since]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.01)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def links_of(url: str, html: str) -> set[str]:
    parser = _Links()
    parser.feed(html)
    parser.close()
    return {urljoin(url, href).split("#", 1)[0] for href in parser.hrefs}


# ---- description ------------------------------------------------------------------------

def test_description_covers_every_kind(demo, hosts, client):
    described = demo.web.hostile_hosts()
    assert [h.kind for h in described] == list(KINDS) and len(described) == 16
    assert len({h.hostname for h in described}) == 16
    for h in described:
        assert h.hostname.endswith(".demo.test") and h.hostname == f"{KINDS[h.kind]}.demo.test"
        assert h.home == f"http://{h.hostname}:{demo.port}/"
        assert h.urls and all(u.startswith(f"http://{h.hostname}:{demo.port}/") for u in h.urls)
        assert set(h.expected_by_url) == set(h.urls)
        assert {h.expected, h.home_expected, *h.expected_by_url.values()} <= STATUS_CLASSES
        assert h.description
        # the home page is served (robots.txt aside, nothing stops a crawler reaching it)
        # and links to every hostile URL
        home = client.get_url(h.home)
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert {u for u in h.urls if u != h.home} <= links_of(h.home, home.text)
    assert hosts["robots_huge"].expected_by_url == {
        hosts["robots_huge"].urls[0]: "robots_disallowed", hosts["robots_huge"].urls[1]: "ok"}
    assert hosts["robots_500"].home_expected == "robots_unavailable"
    assert hosts["crawl_delay_60"].home_expected == "deferred_crawl_delay"
    assert {h.kind: h.expected for h in described} == {
        "slow_drip": "timeout", "never_answer": "timeout", "endless_body": "too_large",
        "huge_body": "too_large", "gzip_bomb": "too_large", "redirect_loop": "redirect_loop",
        "redirect_chain": "too_many_redirects", "rate_limited": "ok", "flapping_503": "ok",
        "not_found": "http_4xx", "binary_html": "ok", "malformed_html": "ok",
        "wrong_charset": "ok", "robots_500": "robots_unavailable",
        "robots_huge": "robots_disallowed", "crawl_delay_60": "deferred_crawl_delay"}


def test_hostile_hosts_are_opt_in_and_leave_generated_hosts_alone():
    plain = DemoWeb(seed=3, hosts=3, pages_per_host=10)
    assert plain.hostile_hosts() == [] and plain.special_hostnames() == []
    assert plain.respond("slow-drip.demo.test", "/").status == 404
    added = add_hostile_hosts(plain)
    assert len(added) == 16 and added["gzip-bomb.demo.test"] == "gzip_bomb"
    assert [h.hostname for h in plain.hostile_hosts()] == list(added)
    hostile = DemoWeb(seed=3, hosts=3, pages_per_host=10, hostile=True)
    assert hostile.special_hostnames() == sorted(added)
    for path in ("/", "/p/3.html", "/robots.txt", "/sitemap.xml"):
        assert hostile.respond("h0001.demo.test", path).body == \
            DemoWeb(seed=3, hosts=3, pages_per_host=10).respond("h0001.demo.test", path).body
    # carried over by with_port / with_day, URLs follow the port
    moved = hostile.with_port(9999).with_day(4)
    assert moved.hostile_hosts()[0].home == "http://slow-drip.demo.test:9999/"


def test_ordinary_robots_txt_allows_all(demo, hosts, client):
    for kind, h in hosts.items():
        if kind in ("robots_500", "robots_huge", "crawl_delay_60"):
            continue
        r = client.get_url(h.home + "robots.txt")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        parser = urllib.robotparser.RobotFileParser()
        parser.parse(r.text.splitlines())
        assert all(parser.can_fetch("recrawl", u) for u in h.urls)
        assert parser.crawl_delay("recrawl") is None


# ---- slow, silent and endless -----------------------------------------------------------

def test_slow_drip_sends_about_a_byte_per_second(demo, hosts, client):
    h = hosts["slow_drip"]
    mark = time.time()
    assert h.config == {"content_length": 100_000, "bytes_per_s": 1.0}
    got = 0
    with client.stream_url(h.urls[0], timeout=httpx.Timeout(5, read=3)) as r:
        assert r.status_code == 200 and r.headers["content-length"] == "100000"
        started = time.monotonic()
        for chunk in r.iter_raw():
            got += len(chunk)
            if time.monotonic() - started >= 2.0:
                break
        elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 3.5
    assert 1 <= got <= 4, got  # ~1 byte a second, nowhere near 100000
    [row] = logged_rows(demo, h.hostname, 1, mark)  # logged once the client went away
    assert (row.path, row.status) == ("/drip.html", 200)
    assert 1 <= row.bytes_sent <= 5 and row.end - row.start >= 1.9


def test_never_answer_sends_nothing_and_is_logged_when_the_client_leaves(demo, hosts, client):
    h = hosts["never_answer"]
    mark = time.time()
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.get_url(h.urls[0], timeout=httpx.Timeout(5, read=1.0))
    assert time.monotonic() - started >= 0.95
    # meanwhile and afterwards the server answers other hosts at once
    assert client.get_url(demo.web.page_url(0, 1)).status_code == 200
    [row] = logged_rows(demo, h.hostname, 1, mark)
    assert (row.path, row.status, row.bytes_sent) == ("/hang.html", 0, 0)  # 0: never answered
    assert row.end - row.start >= 0.9


def test_endless_body_is_chunked_and_never_ends(demo, hosts, client):
    h = hosts["endless_body"]
    mark = time.time()
    got = 0
    with client.stream_url(h.urls[0]) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        assert r.headers["transfer-encoding"] == "chunked" and "content-length" not in r.headers
        for chunk in r.iter_raw():
            if got == 0:
                assert chunk.startswith(b"<!doctype html>")
            got += len(chunk)
            if got >= 8 * MB:
                break
    assert got >= 8 * MB
    [row] = logged_rows(demo, h.hostname, 1, mark)
    assert row.path == "/endless.html" and row.status == 200 and row.bytes_sent >= 8 * MB


def test_huge_body_streams_exactly_50_mb(demo, hosts, client):
    h = hosts["huge_body"]
    assert h.config["content_length"] == 52_428_800
    got = 0
    with client.stream_url(h.urls[0]) as r:
        assert r.status_code == 200 and r.headers["content-length"] == "52428800"
        for chunk in r.iter_raw():
            got += len(chunk)
    assert got == 52_428_800
    r = client.head_url(h.urls[0])
    assert r.status_code == 200 and r.headers["content-length"] == "52428800" and r.content == b""


def test_gzip_bomb_inflates_past_10_mb(demo, hosts, client):
    h = hosts["gzip_bomb"]
    wire = b""
    with client.stream_url(h.urls[0]) as r:
        assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
        assert r.headers["content-type"].startswith("text/html")
        for chunk in r.iter_raw():  # raw: the compressed bytes, httpx does not inflate them
            wire += chunk
    assert 20_000 < len(wire) < 100_000 and len(wire) == h.config["compressed_bytes"]
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    first = inflater.decompress(wire, 4096)
    assert first.startswith(b"<!doctype html>")
    size = len(first)
    while inflater.unconsumed_tail:
        size += len(inflater.decompress(inflater.unconsumed_tail, 4 * MB))
    assert size > 10 * MB and size == h.config["decompressed_bytes"] == 50 * MB


def test_server_stays_responsive_while_hostile_responses_run(demo, hosts, client, send_get):
    stalled = []
    try:
        for kind in ("slow_drip", "never_answer", "endless_body", "huge_body"):
            # never read: the endless and 50 MB streams fill the buffers
            stalled.append(send_get(demo.port, hosts[kind].urls[0]))
        time.sleep(0.3)
        for n in range(5):
            started = time.monotonic()
            assert client.get_url(demo.web.page_url(1, n)).status_code == 200
            assert time.monotonic() - started < 0.5
    finally:
        for sock in stalled:
            sock.close()


def test_stop_returns_promptly_with_never_answer_and_drip_open(send_get):
    thread = DemoWebThread(DemoWeb(hosts=1, pages_per_host=5, hostile=True), port=0).start()
    hosts = {h.kind: h for h in thread.web.hostile_hosts()}
    socks = []
    try:
        for kind in ("never_answer", "slow_drip"):
            socks.append(send_get(thread.port, hosts[kind].urls[0]))
        assert socks[1].recv(4096).startswith(b"HTTP/1.1 200 ")  # the drip has begun
        time.sleep(0.2)
        started = time.monotonic()
        thread.stop()
        assert time.monotonic() - started < 3.0
        for sock in socks:  # both connections were closed by the server
            sock.settimeout(2)
            try:
                while sock.recv(65536):
                    pass
            except ConnectionResetError:
                pass
        rows = {row.host: row for row in thread.access_log.rows}
        assert rows["never-answer.demo.test"].status == 0
        assert rows["slow-drip.demo.test"].status == 200
        assert rows["slow-drip.demo.test"].bytes_sent < 5
    finally:
        for sock in socks:
            sock.close()
        thread.stop()


# ---- redirects, rate limits, flapping, 404s ---------------------------------------------

def test_redirect_loop(hosts, client):
    h = hosts["redirect_loop"]
    a, b = h.config["cycle"]
    assert h.urls == (a,)
    r = client.get_url(a, follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == b
    r = client.get_url(b, follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"] == a


def test_redirect_chain_of_20_hops(hosts, client):
    h = hosts["redirect_chain"]
    url, hops = h.urls[0], 0
    while True:
        r = client.get_url(url, follow_redirects=False)
        if r.status_code != 302:
            break
        assert r.headers["location"] == urljoin(url, str(hops + 1))
        url = r.headers["location"]
        hops += 1
    assert r.status_code == 200 and hops == h.config["hops"] == 20 and url == h.config["final_url"]


def test_429_once_then_200(demo, hosts, client):
    h = hosts["rate_limited"]
    mark = time.time()
    assert h.config["retry_after_s"] == 2
    r = client.get_url(h.urls[0])
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert client.get_url(h.urls[0]).status_code == 200
    assert client.get_url(h.urls[0]).status_code == 200
    assert client.get_url(h.home).status_code == 200  # other pages never counted
    rows = logged_rows(demo, h.hostname, 4, mark)
    assert [(r.path, r.status) for r in rows] == [("/busy.html", 429), ("/busy.html", 200),
                                                  ("/busy.html", 200), ("/", 200)]


def test_flapping_503_twice_then_200(demo, hosts, client):
    h = hosts["flapping_503"]
    assert h.config["failures"] == 2 and h.config["retry_after_s"] == 1
    statuses = []
    for _ in range(4):
        r = client.get_url(h.urls[0])
        statuses.append(r.status_code)
        if r.status_code == 503:
            assert r.headers["retry-after"] == "1"
    assert statuses == [503, 503, 200, 200]


def test_request_counts_are_per_server_run():
    web = DemoWeb(hosts=1, pages_per_host=5, hostile=True)
    assert web.respond("rate-limited.demo.test", "/busy.html").status == 429
    assert web.respond("rate-limited.demo.test", "/busy.html").status == 200
    assert web.with_day(3).respond("rate-limited.demo.test", "/busy.html").status == 200  # shared
    for _ in range(2):  # every server starts counting afresh
        with DemoWebThread(web, port=0) as thread, \
                httpx.Client(trust_env=False, timeout=5) as c:
            url = f"http://127.0.0.1:{thread.port}/busy.html"
            codes = [c.get(url, headers={"Host": "rate-limited.demo.test"}).status_code for _ in range(2)]
            assert codes == [429, 200]


def test_broken_links_404(hosts, client):
    h = hosts["not_found"]
    assert len(h.urls) >= 3
    for url in h.urls:
        assert client.get_url(url).status_code == 404


# ---- content: binary, tag soup, lying charset -------------------------------------------

def test_html_urls_that_serve_binary(hosts, client):
    h = hosts["binary_html"]
    file_url, mislabelled_url = h.urls
    r = client.get_url(file_url)
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    assert r.content.startswith(b"\x89PNG\r\n\x1a\n") and r.content.count(b"\x00") > 100
    r = client.get_url(mislabelled_url)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.content.startswith(b"PK\x03\x04") and r.content.count(b"\x00") > 100
    with pytest.raises(UnicodeDecodeError):
        r.content.decode("utf-8")
    assert h.config["content_types"][file_url] == "application/octet-stream"


def test_malformed_html_still_yields_its_valid_links(hosts, client):
    h = hosts["malformed_html"]
    r = client.get_url(h.urls[0])
    assert r.status_code == 200 and "<p <p>" in r.text
    expected = set(h.config["links"])
    assert len(expected) >= 5
    assert expected <= links_of(h.urls[0], r.text)  # html.parser
    assert expected <= set(extract_links(r.content, h.urls[0]))  # the crawler's parser
    for url in expected:
        assert client.get_url(url).status_code == 200


def test_lying_charset(hosts, client):
    h = hosts["wrong_charset"]
    r = client.get_url(h.urls[0])
    assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
    assert b'<meta charset="utf-8">' in r.content and b"Caf\xe9" in r.content
    with pytest.raises(UnicodeDecodeError):
        r.content.decode("utf-8")
    assert h.config["text"] in r.content.decode("cp1252")
    assert "\ufffd" in r.content.decode("utf-8", errors="replace")


# ---- robots.txt -------------------------------------------------------------------------

def test_robots_txt_500(hosts, client):
    h = hosts["robots_500"]
    assert client.get_url(h.home + "robots.txt").status_code == 500
    assert h.home in h.urls and all(v == "robots_unavailable" for v in h.expected_by_url.values())
    assert client.get_url(h.urls[1]).status_code == 200  # served to a crawler that ignores it


def test_robots_txt_of_2_mb(hosts, client):
    h = hosts["robots_huge"]
    blocked, open_url = h.urls
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 200 and len(r.content) == 2 * MB == h.config["robots_bytes"]
    assert r.content.index(b"Disallow: /blocked/") == h.config["disallow_offset"] < 100_000
    for text in (r.content[:100_000], r.content):  # a capped reader and a full one agree
        parser = urllib.robotparser.RobotFileParser()
        parser.parse(text.decode("ascii").splitlines())
        assert not parser.can_fetch("recrawl", blocked)
        assert parser.can_fetch("recrawl", open_url) and parser.can_fetch("recrawl", h.home)
    assert h.expected_by_url == {blocked: "robots_disallowed", open_url: "ok"}
    assert client.get_url(open_url).status_code == 200


def test_crawl_delay_60(hosts, client):
    h = hosts["crawl_delay_60"]
    r = client.get_url(h.home + "robots.txt")
    assert r.status_code == 200 and "Crawl-delay: 60\n" in r.text
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(r.text.splitlines())
    assert parser.crawl_delay("recrawl") == 60 == h.config["crawl_delay_s"]
    assert parser.can_fetch("recrawl", h.urls[1])


# ---- CLI --------------------------------------------------------------------------------

def test_cli_seeds_hostile(demoweb_cli):
    out = demoweb_cli("seeds", "--port", "8471", "--hosts", "2", "--hostile").stdout.splitlines()
    assert out[:2] == ["http://h0000.demo.test:8471/", "http://h0001.demo.test:8471/"]
    assert out[2:] == [f"http://{label}.demo.test:8471/" for label in KINDS.values()]


def test_cli_serve_hostile():
    with DemoWebProcess(hosts=2, pages_per_host=5, hostile=True) as server:
        assert server.ready_line.endswith("hosts=2 hostile=16"), server.ready_line
        with httpx.Client(trust_env=False, timeout=5) as c:
            r = c.get(f"http://{server.address}/loop/a", headers={"Host": "redirect-loop.demo.test"})
        assert r.status_code == 302
        assert r.headers["location"] == f"http://redirect-loop.demo.test:{server.port}/loop/b"
        rows = server.stop()
    assert server.returncode == 0
    assert [(r["host"], r["path"], r["status"]) for r in rows] == [("redirect-loop.demo.test", "/loop/a", 302)]
