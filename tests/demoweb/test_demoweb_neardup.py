"""The labelled near-duplicate hosts: group labels, that variants share their article text and
differ only where their kind says, that mirrors are byte-identical and different articles are
really different, all reachable from the home pages, deterministic, and served over loopback
(httpx, Host header set, trust_env=False)."""

from __future__ import annotations

import re
import urllib.robotparser
from html.parser import HTMLParser
from itertools import combinations
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest

from demoweb import (NEAR_DUP_KINDS, DemoWeb, DemoWebThread, NearDupGroup,
                                  add_near_duplicate_hosts)
from demoweb.process import DemoWebProcess
from demoweb.special_hosts.neardup_hosts import ARTICLE_WORDS

VARYING = {  # the element that differs within a group of these kinds
    "ad_rotation": re.compile(r'<div class="ad">.*?</div>\n'),
    "date_line": re.compile(r'<p class="dateline">.*?</p>\n'),
    "visitor_counter": re.compile(r'<p class="counter">.*?</p>\n'),
}


@pytest.fixture(scope="module")
def web() -> DemoWeb:
    return DemoWeb(seed=5, hosts=2, pages_per_host=5, near_duplicates=True)


@pytest.fixture(scope="module")
def groups(web) -> list[NearDupGroup]:
    return web.near_duplicate_groups()


@pytest.fixture(scope="module")
def pages(web, groups) -> dict[str, str]:
    """url -> html of every labelled URL, through respond()."""
    return {url: fetch(web, url) for g in groups for url in g.urls}


def fetch(web: DemoWeb, url: str) -> str:
    parts = urlsplit(url)
    r = web.respond(parts.netloc, parts.path or "/")
    assert r.status == 200, url
    return r.body.decode("utf-8")


class _Parsed(HTMLParser):
    """Text inside <article>, text outside it, and the hrefs."""

    def __init__(self, text: str):
        super().__init__()
        self.article: list[str] = []
        self.outside: list[str] = []
        self.hrefs: list[str] = []
        self._depth = 0
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self._depth += 1
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)

    def handle_endtag(self, tag):
        if tag == "article":
            self._depth -= 1

    def handle_data(self, data):
        (self.article if self._depth else self.outside).append(data)


def article_text(page: str) -> str:
    return " ".join(" ".join(_Parsed(page).article).split())


def shingles(text: str, k: int = 4) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


# ---- labels -----------------------------------------------------------------------------

def test_group_labels(web, groups):
    assert NEAR_DUP_KINDS == ("ad_rotation", "date_line", "visitor_counter", "boilerplate",
                              "exact_mirror", "distinct")
    assert [g.kind for g in groups] == sorted((g.kind for g in groups), key=NEAR_DUP_KINDS.index)
    by_kind = {k: [g for g in groups if g.kind == k] for k in NEAR_DUP_KINDS}
    assert all(len(by_kind[k]) >= 2 for k in NEAR_DUP_KINDS[:5])
    assert 10 <= sum(len(by_kind[k]) for k in NEAR_DUP_KINDS[:5]) <= 12
    assert all(3 <= len(g.urls) <= 5 for k in NEAR_DUP_KINDS[:5] for g in by_kind[k])
    assert len(by_kind["distinct"]) == 20 and all(len(g.urls) == 1 for g in by_kind["distinct"])
    assert all(g.exact == (g.kind == "exact_mirror") for g in groups)
    ids = [g.group_id for g in groups]
    urls = [u for g in groups for u in g.urls]
    assert len(set(ids)) == len(ids) and len(set(urls)) == len(urls)
    for url in urls:
        parts = urlsplit(url)
        assert parts.scheme == "http" and parts.port == web.port and parts.hostname.endswith(".demo.test")
    assert {urlsplit(u).hostname for u in web.near_duplicate_homes()} == {
        "articles.demo.test", "syndication.demo.test", "www.mirror.demo.test", "mirror.demo.test",
        "template.demo.test", "tags.demo.test"}
    # the exact mirrors: www and bare host, two paths on one host
    mirror = next(g for g in by_kind["exact_mirror"] if g.group_id != "mirror-home")
    assert {urlsplit(u).hostname for u in mirror.urls} == {"www.mirror.demo.test", "mirror.demo.test"}
    assert {urlsplit(u).path.split("/")[1] for u in mirror.urls} == {"a", "print"}


def test_opt_in_and_carried_over():
    plain = DemoWeb(hosts=2, pages_per_host=5)
    assert plain.near_duplicate_groups() == [] and plain.near_duplicate_homes() == []
    assert plain.respond("articles.demo.test", "/").status == 404
    added = add_near_duplicate_hosts(plain)
    assert set(added) == {urlsplit(u).hostname for u in plain.near_duplicate_homes()}
    moved = plain.with_port(9999).with_day(3)
    assert all(":9999/" in u for g in moved.near_duplicate_groups() for u in g.urls)
    # pages do not depend on the port or the day
    assert fetch(moved, moved.near_duplicate_groups()[0].urls[0]) == fetch(
        plain, plain.near_duplicate_groups()[0].urls[0])
    both = DemoWeb(hosts=2, pages_per_host=5, traps=True, hostile=True, near_duplicates=True)
    assert both.trap_hosts() and both.hostile_hosts() and len(both.near_duplicate_groups()) == 31


# ---- content ----------------------------------------------------------------------------

def test_articles_are_long_realistic_pages(pages):
    for url, page in pages.items():
        if url.endswith("/") or url.endswith("/index.html"):
            continue
        words = len(article_text(page).split())
        assert ARTICLE_WORDS[0] <= words <= ARTICLE_WORDS[1] + 120, (url, words)
        for tag in ("<header>", "<nav>", "<article>", "<aside>", "<footer>", "<h1>", "<h2"):
            assert tag in page
        assert page.count("<article>") == 1


def test_variants_share_article_and_differ_where_labelled(groups, pages):
    for g in groups:
        if g.kind == "distinct":
            continue
        texts = {article_text(pages[u]) for u in g.urls}
        assert len(texts) == 1, g.group_id
        bodies = [pages[u] for u in g.urls]
        if g.kind in VARYING:
            pattern = VARYING[g.kind]
            varying = [pattern.findall(b) for b in bodies]
            assert all(len(v) == 1 for v in varying), g.group_id
            assert len({v[0] for v in varying}) == len(bodies), g.group_id  # differs per URL
            # ... and it is the only difference
            assert len({pattern.sub("", b) for b in bodies}) == 1, g.group_id
            other = [k for k in VARYING if k != g.kind and k != "date_line"]
            assert not any(VARYING[k].search(b) for k in other for b in bodies)
        elif g.kind == "boilerplate":
            outside = [" ".join(" ".join(_Parsed(b).outside).split()) for b in bodies]
            for a, b in combinations(outside, 2):
                assert jaccard(set(a.split()), set(b.split())) < 0.8  # different boilerplate
            for part in ('<p class="site-name">', "<nav>", "<aside>", "<footer>"):
                chunks = [b[b.index(part):b.index(part) + 200] for b in bodies]
                assert len(set(chunks)) == len(bodies), (g.group_id, part)
        if g.kind != "exact_mirror":
            assert len(set(bodies)) == len(bodies), g.group_id  # no accidental exact copies
            # still near-duplicates as whole pages
            for a, b in combinations(bodies, 2):
                assert jaccard(shingles(a), shingles(b)) > 0.8, g.group_id


def test_exact_mirrors_are_byte_identical(web, groups):
    for g in groups:
        if not g.exact:
            continue
        responses = []
        for url in g.urls:
            parts = urlsplit(url)
            responses.append(web.respond(parts.netloc, parts.path))
        assert len({r.body for r in responses}) == 1, g.group_id
        assert len({r.header("ETag") for r in responses}) == 1
        assert "mirror.demo.test" not in responses[0].body.decode()  # only relative links


def test_different_articles_differ_substantially(groups, pages):
    firsts = [pages[g.urls[0]] for g in groups if g.group_id != "mirror-home"]
    sh = [shingles(article_text(p)) for p in firsts]
    for i, j in combinations(range(len(sh)), 2):
        assert jaccard(sh[i], sh[j]) < 0.5, (i, j)
    # the hard negatives: same template, different article; whole pages are not near-dups
    distinct = [pages[g.urls[0]] for g in groups if g.kind == "distinct"]
    outside = {re.sub(r"<main.*</main>|<title>.*</title>|<meta name=\"description\"[^>]*>", "", p,
                      flags=re.S) for p in distinct}
    assert len(outside) == 1  # identical boilerplate (header, nav, footer) apart from the title
    asides = {p[p.index("<aside>"):p.index("</aside>")] for p in distinct}
    assert len(asides) == 1
    for a, b in combinations(distinct[:8], 2):
        assert jaccard(shingles(a), shingles(b)) < 0.5


# ---- reachability, robots, HTTP -----------------------------------------------------------

def test_everything_linked_from_home_pages(web, groups):
    reachable: set[str] = set()
    for home in web.near_duplicate_homes():
        reachable.add(home)
        for href in _Parsed(fetch(web, home)).hrefs:
            reachable.add(urldefrag(urljoin(home, href))[0])
    missing = [u for g in groups for u in g.urls if u not in reachable]
    assert missing == []
    # every link on every page resolves to a 200 on its own host (the tag pages' lists: on
    # template.demo.test, with the web's port)
    for url in list(reachable):
        page = fetch(web, url)
        for href in _Parsed(page).hrefs:
            target = urldefrag(urljoin(url, href))[0]
            parts = urlsplit(target)
            if urlsplit(url).hostname == "tags.demo.test" and parts.hostname != "tags.demo.test":
                assert parts.hostname == "template.demo.test" and parts.port == web.port, target
            else:
                assert parts.hostname == urlsplit(url).hostname
            assert web.respond(parts.netloc, parts.path).status == 200, target


def test_robots_and_conditional_requests(web, groups):
    for home in web.near_duplicate_homes():
        host = urlsplit(home).netloc
        r = web.respond(host, "/robots.txt")
        assert r.status == 200
        rp = urllib.robotparser.RobotFileParser()
        rp.parse(r.body.decode().splitlines())
        assert all(rp.can_fetch("recrawl", u) for g in groups for u in g.urls if urlsplit(u).netloc == host)
    assert web.respond("articles.demo.test", "/nope.html").status == 404
    url = groups[2].urls[1]  # a date_line variant: Last-Modified follows the shown date
    parts = urlsplit(url)
    r = web.respond(parts.netloc, parts.path)
    etag, modified = r.header("ETag"), r.header("Last-Modified")
    assert etag and modified
    shown = re.search(r'<p class="dateline">Updated <time datetime="([^"]+)"', r.body.decode()).group(1)
    assert shown[:10] in _iso(modified)
    assert web.respond(parts.netloc, parts.path, {"if-none-match": etag}).status == 304
    assert web.respond(parts.netloc, parts.path, {"if-modified-since": modified}).status == 304
    assert web.respond(parts.netloc, parts.path, {"if-none-match": '"other"'}).status == 200


def _iso(http_date_value: str) -> str:
    from email.utils import parsedate_to_datetime

    return parsedate_to_datetime(http_date_value).isoformat()


def test_deterministic(groups, pages):
    again = DemoWeb(seed=5, hosts=2, pages_per_host=5, near_duplicates=True)
    assert again.near_duplicate_groups() == groups
    for url in list(pages)[::3]:
        assert fetch(again, url) == pages[url]
    other = DemoWeb(seed=6, hosts=2, pages_per_host=5, near_duplicates=True)
    assert [g.group_id for g in other.near_duplicate_groups()] == [g.group_id for g in groups]
    url = other.near_duplicate_groups()[0].urls[0]
    assert article_text(fetch(other, url)) != article_text(pages[groups[0].urls[0]])


# ---- over loopback ------------------------------------------------------------------------

def test_served_over_loopback():
    with DemoWebThread(DemoWeb(seed=5, hosts=2, pages_per_host=5, near_duplicates=True), port=0) as demo:
        web = demo.web
        with httpx.Client(base_url=f"http://127.0.0.1:{demo.port}", trust_env=False, timeout=5) as c:
            def get(url: str) -> httpx.Response:
                parts = urlsplit(url)
                return c.get(parts.path or "/", headers={"Host": parts.netloc})

            for home in web.near_duplicate_homes():
                r = get(home)
                assert r.status_code == 200 and "text/html" in r.headers["content-type"]
            for g in web.near_duplicate_groups():
                if g.kind in ("distinct",) and g.group_id != "distinct-01":
                    continue
                responses = [get(u) for u in g.urls]
                assert all(r.status_code == 200 for r in responses)
                assert all(r.content == fetch(web, u).encode() for r, u in zip(responses, g.urls))
                if g.exact:
                    assert len({r.content for r in responses}) == 1
                    assert len({r.headers["etag"] for r in responses}) == 1
                else:
                    assert len({article_text(r.text) for r in responses}) == 1
                assert all(r.headers.get("last-modified") for r in responses)


def test_cli_seeds_with_near_duplicates(demoweb_cli):
    out = demoweb_cli("seeds", "--port", "8471", "--hosts", "1", "--near-duplicates").stdout.splitlines()
    assert out == ["http://h0000.demo.test:8471/"] + [
        f"http://{label}.demo.test:8471/"
        for label in ("articles", "syndication", "www.mirror", "mirror", "template", "tags")]


def test_cli_serve_with_near_duplicates():
    with DemoWebProcess(hosts=1, pages_per_host=3, near_duplicates=True) as server:
        assert server.ready_line.endswith("hosts=1 neardup=6"), server.ready_line
        with httpx.Client(trust_env=False, timeout=5) as c:
            r = c.get(f"http://{server.address}/index.html", headers={"Host": "www.mirror.demo.test"})
            r2 = c.get(f"http://{server.address}/", headers={"Host": "mirror.demo.test"})
        assert r.status_code == 200 and r.content == r2.content
        server.stop()
    assert server.returncode == 0


def test_the_tag_pages_look_alike_by_their_main_text_and_list_other_stories(web):
    """tags.demo.test: 12 tag pages whose main text is mostly one shared description (their
    SimHash fingerprints within 3 bits of each other), each listing 3 to 5 of
    template.demo.test's stories, no two tags sharing more than a third of their stories."""
    from crawl_assets.crawler.content.simhash import hamming, page_text, simhash64
    from demoweb.special_hosts.tag_listing import TAG_COUNT, tag_names

    names = tag_names(web.seed)
    assert len(names) == TAG_COUNT == 12
    pages = {n: fetch(web, f"http://tags.demo.test:{web.port}/tag/{n}.html") for n in names}
    prints = [simhash64(page_text(p)) for p in pages.values()]
    assert max(hamming(a, b) for a, b in combinations(prints, 2)) <= 3
    listed = {n: {h for h in _Parsed(p).hrefs if "template.demo.test" in h} for n, p in pages.items()}
    assert all(3 <= len(s) <= 5 for s in listed.values())
    assert all(len(a & b) / len(a | b) <= 1 / 3 for a, b in combinations(listed.values(), 2))
    home = fetch(web, f"http://tags.demo.test:{web.port}/")
    assert {urlsplit(h).path for h in _Parsed(home).hrefs} >= {f"/tag/{n}.html" for n in names}
