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
