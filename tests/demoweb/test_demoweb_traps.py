"""The crawler-trap hosts: their description, and that each trap really generates an endless
(or exploding) URL space, both through DemoWeb.respond() and over real loopback sockets
(httpx, Host header set, trust_env=False)."""

from __future__ import annotations

import re
import urllib.robotparser
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx
import pytest

from demoweb import TRAP_KINDS, DemoWeb, DemoWebThread, TrapHost, add_trap_hosts
from demoweb.process import DemoWebProcess
from demoweb.special_hosts.trap_hosts import FACETS, KINDS, SESSION_PAGES

SESSION_ID = re.compile(r";jsessionid=[0-9A-F]{32}|[?&](?:sid=[0-9a-f]{32}|PHPSESSID=[0-9a-v]{26})")


@pytest.fixture(scope="module")
def demo():
    with DemoWebThread(DemoWeb(seed=3, hosts=3, pages_per_host=10, traps=True), port=0) as thread:
        yield thread


@pytest.fixture(scope="module")
def traps(demo) -> dict[str, TrapHost]:
    return {t.kind: t for t in demo.web.trap_hosts()}


def fetch(web: DemoWeb, url: str):
    """(status, html) of an absolute URL through respond(), no server involved."""
    parts = urlsplit(url)
    r = web.respond(parts.netloc, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    return r.status, r.body.decode("utf-8")


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.tags: set[str] = set()
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self._in_title = tag == "title"
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def links_of(url: str, html: str) -> list[str]:
    """Absolute links of a page, no fragments, in document order, deduplicated."""
    seen: dict[str, None] = {}
    for href in parse(html).hrefs:
        seen.setdefault(urljoin(url, href).split("#", 1)[0], None)
    return list(seen)


def strip_session(url: str) -> str:
    return SESSION_ID.sub("", url).replace("?&", "?")


# ---- description and opt-in -------------------------------------------------------------

def test_description_covers_every_kind(demo, traps):
    described = demo.web.trap_hosts()
    assert [t.kind for t in described] == list(TRAP_KINDS) == list(KINDS) and len(described) == 5
    assert [t.hostname for t in described] == [
        "calendar.demo.test", "session-ids.demo.test", "facets.demo.test",
        "deep-paths.demo.test", "random-links.demo.test"]
    for t in described:
        assert t.home == f"http://{t.hostname}:{demo.port}/" and t.description
    assert {k: t.real_pages for k, t in traps.items()} == {
        "calendar": None, "session_ids": SESSION_PAGES + 1, "facets": 102,
        "deep_paths": None, "random_links": None}
    assert len(set(traps["session_ids"].config["real_urls"])) == 21
    assert len(set(traps["facets"].config["real_urls"])) == 102


def test_traps_are_opt_in_and_combine_with_hostile_hosts():
    plain = DemoWeb(seed=3, hosts=3, pages_per_host=10)
    assert plain.trap_hosts() == [] and plain.respond("calendar.demo.test", "/").status == 404
    assert add_trap_hosts(plain)["facets.demo.test"] == "facets"
    assert [t.kind for t in plain.trap_hosts()] == list(TRAP_KINDS)
    both = DemoWeb(seed=3, hosts=3, pages_per_host=10, traps=True, hostile=True)
    assert len(both.hostile_hosts()) == 16 and len(both.trap_hosts()) == 5
    assert len(both.special_hostnames()) == 21
    assert both.respond("redirect-loop.demo.test", "/loop/a").status == 302
    assert both.respond("calendar.demo.test", "/calendar?month=2026-11").status == 200
    fresh = DemoWeb(seed=3, hosts=3, pages_per_host=10)
    for path in ("/", "/p/3.html", "/robots.txt", "/sitemap.xml"):
        assert both.respond("h0001.demo.test", path).body == fresh.respond("h0001.demo.test", path).body
    moved = both.with_port(9999).with_day(4)
    assert moved.trap_hosts()[0].home == "http://calendar.demo.test:9999/"
    assert b"http://calendar.demo.test:9999/" in b"".join(
        moved.respond("calendar.demo.test", f"/calendar?month=2030-0{m}").body for m in range(1, 10))


def test_robots_txt_allows_everything(traps, client):
    for t in traps.values():
        r = client.get_url(t.home + "robots.txt")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        parser = urllib.robotparser.RobotFileParser()
        parser.parse(r.text.splitlines())
        for url in [t.home, *links_of(t.home, client.get_url(t.home).text)[:10]]:
            assert parser.can_fetch("recrawl", url), url
        assert parser.crawl_delay("recrawl") is None


def test_pages_are_reasonable_html_over_http(demo, traps, client):
    samples = {
        "calendar": ["/", "/calendar", "/calendar?month=2026-11", "/calendar?month=2031-02&day=28"],
        "session_ids": ["/", "/p/0.html", "/p/7.html;jsessionid=0123", "/p/19.html?sid=abc"],
        "facets": ["/", "/shop", "/shop?color=red", "/shop?size=m&color=red&brand=acme"],
        "deep_paths": ["/", "/a/", "/docs/a/b/a/b/", "/x/y/z"],
        "random_links": ["/", "/r/0000abcd.html", "/search?q=tea+river&page=3", "/t/5?ref=old"],
    }
    for kind, paths in samples.items():
        t = traps[kind]
        for path in paths:
            url = t.home.rstrip("/") + path
            r = client.get_url(url)
            assert r.status_code == 200, url
            assert r.headers["content-type"] == "text/html; charset=utf-8"
            assert int(r.headers["content-length"]) == len(r.content)
            assert 10_000 <= len(r.content) <= 30_000, (url, len(r.content))
            assert r.content.startswith(b"<!doctype html>") and r.text.rstrip().endswith("</html>")
            page = parse(r.text)
            assert {"html", "head", "title", "body", "nav", "main", "h1", "p", "a"} <= page.tags
            assert page.title.strip()
            links = links_of(url, r.text)
            assert len(links) >= 5
            assert all(urlsplit(u).netloc == f"{t.hostname}:{demo.port}" for u in links)
            assert any(strip_session(u) == t.home for u in links), url  # a way back home
            if kind != "session_ids":  # the model and the server agree byte for byte
                assert demo.web.respond(t.hostname, path).body == r.content


def test_deterministic_and_cached():
    def web():
        return DemoWeb(seed=5, hosts=2, pages_per_host=5, port=8000, traps=True)

    a, b = web(), web()
    paths = {"calendar": "/calendar?month=2040-02", "facets": "/shop?fit=slim&color=red",
             "deep_paths": "/a/b/c/", "random_links": "/item?id=42", "session_ids": "/p/4.html"}
    for kind, path in paths.items():
        host = f"{KINDS[kind]}.demo.test"
        assert a.respond(host, path).body == b.respond(host, path).body  # first views alike
    other_seed = DemoWeb(seed=6, hosts=2, pages_per_host=5, port=8000, traps=True)
    assert other_seed.respond("deep-paths.demo.test", "/a/").body != a.respond("deep-paths.demo.test", "/a/").body
    # conditional requests on the cacheable kinds
    r = a.respond("facets.demo.test", "/shop")
    assert r.status == 200 and a.respond("facets.demo.test", "/shop", {"if-none-match": r.header("ETag")}).status == 304
    # bounded: thousands of distinct URLs answered from a fixed-size cache (its speed is no
    # test's business: a loaded machine took 4.5 s for what a quiet one does in 0.3 s)
    handler = a._special["random-links.demo.test"]
    for i in range(1500):
        assert a.respond("random-links.demo.test", f"/r/{i:08x}.html").status == 200
    info = handler.cache_info()
    assert info.currsize <= info.maxsize == 256 and info.misses >= 1500


# ---- calendar ---------------------------------------------------------------------------

def _month_link(url: str, html: str, month: str) -> str:
    [link] = [u for u in links_of(url, html)
              if dict(parse_qsl(urlsplit(u).query)) == {"month": month}]
    return link


def _next_month(month: str) -> str:
    y, m = map(int, month.split("-"))
    return f"{y + m // 12:04d}-{m % 12 + 1:02d}"


def test_calendar_next_month_goes_on_forever(traps, demo, client):
    t = traps["calendar"]
    web = demo.web
    url, month = t.config["start_url"], "2026-11"
    seen = set()
    for step in range(50):  # model only
        status, html = fetch(web, url)
        assert status == 200 and "Events in " in html
        seen.add(url)
        month = _next_month(month)
        url = _month_link(url, html, month)
        assert url not in seen
    assert month == "2031-01"
    url, month = t.config["start_url"], "2026-11"
    for step in range(50):  # over HTTP, and it links back too
        r = client.get_url(url)
        assert r.status_code == 200
        links = links_of(url, r.text)
        days = [u for u in links if "day=" in u]
        assert len(days) >= 28
        following = _next_month(month)
        nxt = _month_link(url, r.text, following)
        assert _month_link(nxt, client.get_url(nxt).text, month)  # the next month links back
        url, month = nxt, following
    assert month == "2031-01"


def test_calendar_answers_any_month(traps, client):
    home = traps["calendar"].home
    for query in ("month=9999-12", "month=0001-01", "month=banana", "month=2026-13", "month=",
                  "month=123456-07&day=31", "month=2026-02&day=30", "x=1"):
        r = client.get_url(f"{home}calendar?{query}")
        assert r.status_code == 200, query
    r = client.get_url(f"{home}calendar?month=9999-12")
    assert any("month=10000-01" in u for u in links_of(str(r.url), r.text))
    day = client.get_url(f"{home}calendar?month=2026-12&day=31")
    assert "Thursday 31 December 2026" in day.text
    assert any("month=2027-01&day=1" in u for u in links_of(f"{home}calendar", day.text))


# ---- session ids ------------------------------------------------------------------------

def test_session_ids_differ_between_views(traps, demo, client):
    t = traps["session_ids"]
    url = t.home + "p/3.html"
    views = [links_of(url, client.get_url(url).text) for _ in range(3)]
    assert all(len(v) >= 8 for v in views)
    assert all(SESSION_ID.search(u) for v in views for u in v)  # every link carries an id
    assert len({frozenset(v) for v in views}) == 3  # all ids new on every view
    assert not set(views[0]) & set(views[1])
    assert {frozenset(map(strip_session, v)) for v in views} == {frozenset(map(strip_session, views[0]))}
    # ids in the request are ignored; the real site is finite
    assert client.get_url(t.home + "p/3.html;jsessionid=" + "A" * 32 + "?sid=x").status_code == 200
    assert client.get_url(t.home + f"p/{SESSION_PAGES}.html").status_code == 404
    # the first views of a fresh web are the same bytes (ids derive from (seed, page, view))
    w1 = DemoWeb(seed=3, hosts=1, pages_per_host=1, traps=True)
    w2 = DemoWeb(seed=3, hosts=1, pages_per_host=1, traps=True)
    first = [w1.respond(t.hostname, "/p/3.html").body for _ in range(2)]
    assert first == [w2.respond(t.hostname, "/p/3.html").body for _ in range(2)]
    assert first[0] != first[1]


def test_session_ids_hide_a_small_site(traps, demo):
    web = demo.web
    t = traps["session_ids"]
    real: set[str] = set()
    raw: set[str] = set()
    queue = [t.home]
    while queue:  # BFS that strips session ids: finds exactly the real pages
        url = queue.pop(0)
        status, html = fetch(web, url)
        assert status == 200
        real.add(strip_session(url))
        for link in links_of(url, html):
            raw.add(link)
            if strip_session(link) not in real and strip_session(link) not in map(strip_session, queue):
                queue.append(link)
    assert real == set(t.config["real_urls"]) and len(real) == t.real_pages == 21
    assert len(raw) > 5 * len(real)  # a crawler that keeps ids sees ever more URLs


# ---- faceted navigation -----------------------------------------------------------------

def _state(url: str) -> tuple[tuple[str, str], ...]:
    return tuple(parse_qsl(urlsplit(url).query))


def test_facets_explode(traps, demo, client):
    t = traps["facets"]
    listing = t.config["listing"]
    r = client.get_url(listing)
    first = [u for u in links_of(listing, r.text) if urlsplit(u).path == "/shop" and urlsplit(u).query]
    assert len(first) == 100 and {frozenset(_state(u)) for u in first} == {
        frozenset({(k, v)}) for k, vs in FACETS.items() for v in vs}
    assert set(first) <= set(t.config["real_urls"])
    # breadth-first through respond(): 200 pages reach thousands of URLs, multi-filter states
    web = demo.web
    seen, queue, fetched = {listing}, [listing], 0
    while queue and fetched < 200:
        url = queue.pop(0)
        status, html = fetch(web, url)
        assert status == 200
        fetched += 1
        for link in links_of(url, html):
            if urlsplit(link).path == "/shop" and link not in seen:
                seen.add(link)
                queue.append(link)
    states = {frozenset(_state(u)) for u in seen}
    assert len(seen) > 5_000 and len(states) > 3_000
    assert max(len(s) for s in states) >= 3
    orders: dict[frozenset, set] = {}
    for u in seen:
        orders.setdefault(frozenset(_state(u)), set()).add(_state(u))
    assert any(len(v) > 1 for v in orders.values())  # same filters, different parameter order
    # deeper: keep adding filters over HTTP, the links keep offering one more
    url = listing
    for depth in range(1, 11):
        links = links_of(url, client.get_url(url).text)
        more = [u for u in links if len(_state(u)) == depth]
        assert more, depth
        url = more[-1]
    assert len(_state(url)) == 10 and client.get_url(url).status_code == 200
    assert client.get_url(listing + "?colour=mauve&utm_source=x").status_code == 200


# ---- deep paths -------------------------------------------------------------------------

def test_deep_paths_grow_deeper(traps, demo, client):
    t = traps["deep_paths"]
    url, depth = t.home, 0
    for step in range(30):
        r = client.get_url(url)
        assert r.status_code == 200
        deeper = [u for u in links_of(url, r.text) if urlsplit(u).path.count("/") > depth + 1]
        children = [u for u in deeper if urlsplit(u).path.count("/") == depth + 2]
        assert len(children) >= 3
        url = max(deeper, key=lambda u: urlsplit(u).path.count("/"))  # take the longest step
        new_depth = urlsplit(url).path.count("/") - 1
        assert new_depth > depth
        depth = new_depth
    assert depth >= 40
    path = urlsplit(url).path
    segs = [s for s in path.split("/") if s]
    assert any(segs[i:i + 2] == segs[i + 2:i + 4] for i in range(len(segs) - 3))  # /a/b/a/b/
    # the model agrees and repetition alone goes on: /a/b/ -> /a/b/a/b/ -> ...
    web, url = demo.web, t.home + "a/b/"
    for step in range(20):
        status, html = fetch(web, url)
        assert status == 200
        url = next(u for u in links_of(url, html) if u == url + "a/b/")
    assert urlsplit(url).path == "/a/b" * 21 + "/"


# ---- random links -----------------------------------------------------------------------

def test_random_links_are_new_at_each_level(traps, demo, client):
    t = traps["random_links"]
    seen = {t.home}
    level = [t.home]
    for depth in range(3):
        found = []
        for url in level[:3]:
            r = client.get_url(url)
            assert r.status_code == 200
            links = [u for u in links_of(url, r.text) if u != t.home]
            assert 25 <= len(links) <= 35
            assert not set(links) & seen, depth  # nothing seen before
            seen.update(links)
            found.extend(links)
        level = found
    assert len(seen) > 200
    assert len({urlsplit(u).path.split("/")[1] for u in seen}) > 10  # varied URL shapes
    # deterministic per URL
    assert links_of(level[0], fetch(demo.web, level[0])[1]) == links_of(level[0], client.get_url(level[0]).text)


# ---- CLI --------------------------------------------------------------------------------

def test_cli_seeds_and_serve_with_traps(demoweb_cli):
    out = demoweb_cli("seeds", "--port", "8471", "--hosts", "2", "--traps").stdout.splitlines()
    assert out == ["http://h0000.demo.test:8471/", "http://h0001.demo.test:8471/"] + [
        f"http://{label}.demo.test:8471/" for label in KINDS.values()]
    with DemoWebProcess(hosts=2, pages_per_host=5, traps=True, hostile=True) as server:
        assert server.ready_line.endswith("hosts=2 hostile=16 traps=5"), server.ready_line
        with httpx.Client(trust_env=False, timeout=5) as c:
            r = c.get(f"http://{server.address}/calendar?month=2026-12", headers={"Host": "calendar.demo.test"})
        assert r.status_code == 200 and "?month=2027-01" in r.text
        server.stop()
    assert server.returncode == 0
