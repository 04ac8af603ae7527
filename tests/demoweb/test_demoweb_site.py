"""The pure DemoWeb model: determinism, page shape, link graph, robots, sitemap, caching."""

from __future__ import annotations

import collections
import statistics
import urllib.robotparser
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin

import pytest

from demoweb import HOME_PAGE, DemoWeb
from demoweb.ordinary.change_model import EPOCH
from demoweb.ordinary.robots_variants import ROBOTS_VARIANTS
from demoweb.responses import http_date

PORT = 18471


class _Hrefs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(v for k, v in attrs if k == "href" and v is not None)


def hrefs_of(body: bytes) -> list[str]:
    parser = _Hrefs()
    parser.feed(body.decode("utf-8"))
    parser.close()
    return parser.hrefs


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return DemoWeb(seed=3, hosts=24, pages_per_host=120, port=PORT)


def get(web: DemoWeb, host_index: int, path: str, **headers: str):
    return web.respond(f"{web.hostname(host_index)}:{web.port}", path,
                       {k.replace("_", "-"): v for k, v in headers.items()})


# ---- determinism ----------------------------------------------------------------------

def test_same_parameters_give_byte_identical_responses():
    a = DemoWeb(seed=5, hosts=10, pages_per_host=50, day=4)
    b = DemoWeb(seed=5, hosts=10, pages_per_host=50, day=4)
    paths = ["/", "/p/0.html", "/p/17.html", "/p/49.html", "/robots.txt", "/sitemap.xml"]
    for h in (0, 1, 9):
        for path in paths:
            ra, rb = get(a, h, path), get(b, h, path)
            assert ra.status == rb.status
            assert ra.body == rb.body
            assert ra.headers == rb.headers


def test_different_seed_gives_different_pages():
    a = DemoWeb(seed=5, hosts=10, pages_per_host=50)
    b = DemoWeb(seed=6, hosts=10, pages_per_host=50)
    for path in ("/", "/p/3.html"):
        assert get(a, 2, path).body != get(b, 2, path).body
    assert a.outlinks(2, 3) != b.outlinks(2, 3)


def test_with_port_rewrites_urls_only():
    a = DemoWeb(seed=5, hosts=4, pages_per_host=20, port=1111)
    b = a.with_port(2222)
    assert b.port == 2222 and a.port == 1111
    assert b.base_url(3) == "http://h0003.demo.test:2222"
    assert a.outlinks(1, 4) == [u.replace(":2222", ":1111") for u in b.outlinks(1, 4)]


# ---- page shape -----------------------------------------------------------------------

def test_pages_are_10_to_50_kb_of_html5(web):
    for day in (0, 9, 40):
        w = web.with_day(day)
        for h in range(0, web.hosts, 5):
            for page in [HOME_PAGE, *range(0, web.pages_per_host, 11)]:
                r = get(w, h, w.page_path(page))
                assert r.status == 200
                assert 10 * 1024 <= len(r.body) <= 50 * 1024, (day, h, page, len(r.body))
                text = r.body.decode("utf-8")
                assert text.startswith("<!doctype html>\n<html lang=\"en\">")
                assert '<meta charset="utf-8">' in text
                assert text.count("<title>") == 1 and "</title>" in text
                assert text.count("<p>") >= 10
                assert "<footer>" in text and text.rstrip().endswith("</html>")
                assert r.header("Content-Type") == "text/html; charset=utf-8"
                assert r.header("Content-Length") == str(len(r.body))


def test_html_links_are_exactly_outlinks(web):
    forms = collections.Counter()
    for h in (0, 1, 4, 7, 13):
        for page in [HOME_PAGE, 0, 1, 5, 37, web.pages_per_host - 1, *web.private_urls(h)[:2]]:
            path = page if isinstance(page, str) else web.page_path(page)
            if path.startswith("http"):
                path = path.split(str(web.port), 1)[1]
            page_url = web.base_url(h) + path
            hrefs = hrefs_of(get(web, h, path).body)
            resolved = {urldefrag(urljoin(page_url, href))[0] for href in hrefs}
            assert resolved == set(web.outlinks(h, path))
            for href in hrefs:
                forms["fragment" if "#" in href else "plain"] += 1
                if href.startswith("http://"):
                    forms["absolute"] += 1
                elif href.startswith("//"):
                    forms["protocol-relative"] += 1
                elif href.startswith("../"):
                    forms["dotdot"] += 1
                elif href.startswith("/"):
                    forms["root-relative"] += 1
                else:
                    forms["relative"] += 1
    for form in ("fragment", "absolute", "protocol-relative", "dotdot", "root-relative", "relative"):
        assert forms[form] > 0, forms
    # outlinks are absolute, fragment-free and deduplicated
    links = web.outlinks(2, 9)
    assert len(links) == len(set(links))
    assert all(u.startswith("http://") and "#" not in u for u in links)


def test_link_graph_is_skewed_has_cross_host_links_and_is_reachable(web):
    indegree = collections.Counter()
    total = cross = 0
    outdegrees = []
    for h in range(web.hosts):
        own = f"http://{web.hostname(h)}:"
        for page in [HOME_PAGE, *range(web.pages_per_host)]:
            links = web.outlinks(h, page)
            outdegrees.append(len(links))
            for url in links:
                indegree[url] += 1
                total += 1
                cross += not url.startswith(own)
    assert 0.03 <= cross / total <= 0.15
    assert 10 <= statistics.median(outdegrees) <= 45
    pages = [u for h in range(web.hosts) for u in web.page_urls(h)]
    ranked = sorted((indegree[u] for u in pages), reverse=True)
    top_5_percent = ranked[: len(ranked) // 20]
    assert min(top_5_percent) > 5 * statistics.median(ranked)
    # low page numbers are the popular ones
    assert indegree[web.page_url(3, 0)] > indegree[web.page_url(3, 100)] * 5

    # every public page of a host is reachable from its home page within a few hops
    start = web.base_url(5) + "/"
    depth = {start: 0}
    queue = collections.deque([start])
    while queue:
        url = queue.popleft()
        path = url.split(str(web.port), 1)[1]
        if not url.startswith(web.base_url(5)) or path.endswith((".xml", ".rss", ".atom")):
            continue
        for link in web.outlinks(5, path):
            if link.startswith(web.base_url(5)) and link not in depth:
                depth[link] = depth[url] + 1
                queue.append(link)
    assert set(web.page_urls(5)) <= set(depth)
    assert max(depth[u] for u in web.page_urls(5)) <= 10


# ---- robots.txt, private pages, sitemap -----------------------------------------------

@pytest.mark.parametrize("host_index", range(len(ROBOTS_VARIANTS)))
def test_robots_txt_matches_robots_rules(web, host_index):
    rules = web.robots_rules(host_index)
    r = get(web, host_index, "/robots.txt")
    if not rules["present"]:
        assert r.status == 404
        assert rules["disallow"] == rules["sitemaps"] == rules["feeds"] == [] and rules["crawl_delay"] is None
        return
    assert r.status == 200 and r.header("Content-Type").startswith("text/plain")
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(r.body.decode("utf-8").splitlines())
    private = f"{web.base_url(host_index)}/private/1.html"
    assert parser.can_fetch("anybot", private) == (rules["disallow"] == [])
    assert parser.can_fetch("anybot", web.page_url(host_index, 3))
    # urllib.robotparser only understands integer delays, so read that line directly.
    delays = [float(line.split(":", 1)[1]) for line in r.body.decode().splitlines()
              if line.lower().startswith("crawl-delay:")]
    assert delays == ([rules["crawl_delay"]] if rules["crawl_delay"] is not None else [])
    assert (parser.site_maps() or []) == rules["sitemaps"] + rules["feeds"]


def test_robots_variety_covers_every_kind(web):
    rules = [web.robots_rules(h) for h in range(8)]
    assert any(r["present"] and not r["disallow"] and r["crawl_delay"] is None and not r["sitemaps"] for r in rules)
    assert any(r["disallow"] == ["/private/"] for r in rules)
    assert {r["crawl_delay"] for r in rules} >= {None, 0.1, 0.25}
    assert any(r["sitemaps"] for r in rules)
    assert any(not r["present"] for r in rules)


def test_private_pages_exist_are_linked_and_only_on_disallowing_hosts(web):
    for h in range(8):
        disallows = bool(web.robots_rules(h)["disallow"])
        assert get(web, h, "/private/0.html").status == (200 if disallows else 404)
        linked = {u for page in [HOME_PAGE, *range(web.pages_per_host)] for u in web.outlinks(h, page)
                  if "/private/" in u}
        assert bool(linked) == disallows
        assert linked <= set(web.private_urls(h))


def test_unknown_hosts_and_paths_are_404(web):
    assert web.respond("nope.example", "/", {}).status == 404
    assert web.respond("h42.demo.test", "/", {}).status == 404  # not the canonical name
    assert web.respond(f"h{web.hosts:04d}.demo.test", "/", {}).status == 404
    for path in ("/nothing", f"/p/{web.pages_per_host}.html", "/p/007.html", "/private/9.html"):
        r = get(web, 1, path)
        assert r.status == 404 and b"<html" in r.body
    # host matching ignores case, port and a trailing dot; the query is ignored for routing
    r = web.respond("H0001.Demo.Test.:1234", "/p/2.html?utm=x", {})
    assert r.status == 200 and r.body == get(web, 1, "/p/2.html").body


def test_validators_and_conditional_requests(web):
    r = get(web, 2, "/p/4.html")
    etag, last_modified = r.header("ETag"), r.header("Last-Modified")
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    assert last_modified == http_date(EPOCH)  # day 0: nothing has changed yet
    for inm in (etag, f'"other", {etag}', f"W/{etag}", "*"):
        nm = get(web, 2, "/p/4.html", if_none_match=inm)
        assert nm.status == 304 and nm.body == b"" and nm.header("ETag") == etag
    assert get(web, 2, "/p/4.html", if_none_match='"stale"').status == 200
    assert get(web, 2, "/p/4.html", if_modified_since=last_modified).status == 304
    earlier = http_date(EPOCH - timedelta(days=1))
    assert get(web, 2, "/p/4.html", if_modified_since=earlier).status == 200
    assert get(web, 2, "/p/4.html", if_modified_since="garbage").status == 200
    # If-None-Match wins over If-Modified-Since
    assert get(web, 2, "/p/4.html", if_none_match='"stale"', if_modified_since=last_modified).status == 200
    # robots.txt and sitemap.xml carry validators too
    for path in ("/robots.txt", "/sitemap.xml"):
        tag = get(web, 0, path).header("ETag")
        assert get(web, 0, path, if_none_match=tag).status == 304


def test_seed_and_page_urls():
    w = DemoWeb(hosts=3, pages_per_host=5, port=9000)
    assert w.hostnames() == ["h0000.demo.test", "h0001.demo.test", "h0002.demo.test"]
    assert w.base_url(2) == "http://h0002.demo.test:9000"
    assert w.seed_urls() == [f"http://h000{i}.demo.test:9000/" for i in range(3)]
    assert w.seed_urls(per_host=3)[:3] == ["http://h0000.demo.test:9000/",
                                           "http://h0000.demo.test:9000/p/0.html",
                                           "http://h0000.demo.test:9000/p/1.html"]
    assert len(w.page_urls(1)) == 6 and w.page_urls(1)[-1].endswith("/p/4.html")


def test_scales_to_thousands_of_hosts_lazily():
    w = DemoWeb(hosts=3000, pages_per_host=300)
    assert len(w.hostnames()) == 3000
    r = w.respond("h2999.demo.test", "/p/299.html", {})
    assert r.status == 200
    assert any("h0000.demo.test" in u for h in range(2990, 3000) for u in w.outlinks(h, HOME_PAGE))


def test_special_host_registry_survives_with_port():
    from demoweb import Response

    w = DemoWeb(hosts=2)
    w.register_host("trap.demo.test", lambda web, path, headers: Response(200, [], path.encode()))
    moved = w.with_port(1234)
    assert moved.respond("trap.demo.test:1234", "/x?y", {}).body == b"/x?y"
    assert moved.special_hostnames() == ["trap.demo.test"]
