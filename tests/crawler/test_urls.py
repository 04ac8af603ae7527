import re

import pytest

from crawl_assets.crawler.urls import UrlError, host_of, normalize_url


@pytest.mark.parametrize("raw, expected", [
    ("HTTP://Example.COM:80/a/../b/./c?z=1&a=2#frag", "http://example.com/b/c?a=2&z=1"),
    ("https://example.com:443", "https://example.com/"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("https://example.com/?utm_source=x&b=1&gclid=2&fbclid=3", "https://example.com/?b=1"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://example.com./a b", "http://example.com/a%20b"),
])
def test_normalize_url_canonical_forms(raw, expected):
    assert normalize_url(raw) == expected


def test_relative_links_resolve_against_the_base():
    base = "http://h0001.demo.test:8471/p/3.html"
    assert normalize_url("7.html", base) == "http://h0001.demo.test:8471/p/7.html"
    assert normalize_url("../p/7.html#x", base) == "http://h0001.demo.test:8471/p/7.html"
    assert normalize_url("//other.test/", base) == "http://other.test/"


@pytest.mark.parametrize("raw", ["ftp://example.com/", "mailto:a@b.c", "http:///nohost", "http://[::1/"])
def test_uncrawlable_urls_are_rejected_with_a_reason(raw):
    with pytest.raises(UrlError):
        normalize_url(raw)


def test_host_of_drops_port_and_case():
    assert host_of("http://h0001.demo.test:8471/") == "h0001.demo.test"


def test_the_fast_link_path_agrees_with_normalize_url():
    import random

    from crawl_assets.crawler.urls import resolve_href
    from crawl_assets.demoweb import DemoWeb

    rng = random.Random(5)
    parts = ["a", "B", "..", ".", "", "p", "7.html", "~x", "-_", "x y", "%41", "q?z=1&a=2",
             "#frag", "é", ";jsessionid=1", "index.html?utm_source=x"]
    bases = ["http://h0001.demo.test:8471/p/3.html", "http://h.test/", "https://h.test/a/b/c",
             "http://h.test/a/b/?q=1", "http://h.test/dir/"]
    hrefs = ["/".join(rng.choice(parts) for _ in range(rng.randint(1, 5))) for _ in range(3000)]
    hrefs += ["/" + h for h in hrefs[:1000]] + ["../" + h for h in hrefs[:500]]
    hrefs += ["http://Other.TEST:80/x/../y", "https://h.test:443/a?b=2&a=1", "http://h.test/#x", ""]
    web = DemoWeb(hosts=3, pages_per_host=10)
    hrefs += [href.decode() for h in range(3) for page in range(10)
              for href in re.findall(rb'href="([^"]*)"', web.render_page(h, page))]
    assert any(h.startswith("../") for h in hrefs) and any(h.startswith("http") for h in hrefs)

    def outcome(fn, *args):
        try:
            return fn(*args)
        except UrlError as exc:
            return UrlError

    for base in bases:
        for href in hrefs:
            assert outcome(resolve_href, href, base) == outcome(normalize_url, href, base), (href, base)
