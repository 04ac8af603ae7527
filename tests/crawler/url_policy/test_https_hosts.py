"""Hosts known to be https (crawler/url_policy/https_hosts.py): what an answer's
Strict-Transport-Security teaches, what leaves a known host known, and which URLs are upgraded."""

import pytest

from crawl_assets.crawler.url_policy.https_hosts import HttpsHosts, hsts_says


@pytest.mark.parametrize("header, says", [
    ("max-age=1", True),  # any max-age over 0, one second included
    ("max-age=31536000; includeSubDomains", True),
    ("Max-Age = 5 ;preload", True),
    ("max-age=0", False),
    ('max-age="0"', False),
    ("includeSubDomains", None),  # no max-age: the header says nothing
    ("", None),
    (None, None),
])
def test_what_an_https_answers_sts_header_says_of_its_host(header, says):
    assert hsts_says("https://h.test/", header) is says
    assert hsts_says("http://h.test/", header) is None  # over http the header means nothing


def test_a_known_host_stays_known_unless_an_https_answer_says_max_age_0():
    https = HttpsHosts({"h.test", "k.test"})
    for url, header in [("https://h.test/a", None), ("https://h.test/b", "includeSubDomains"),
                        ("http://h.test/c", "max-age=0"), ("https://h.test/d", "max-age=1")]:
        https.observe_hsts(url, header)
        assert https.hosts == {"h.test", "k.test"}, (url, header)
    assert https.observe_hsts("https://h.test/e", "max-age=0") is False
    assert https.hosts == {"k.test"}
    assert https.observe_hsts("https://n.test/", "max-age=0") is False and https.hosts == {"k.test"}


def test_only_the_urls_of_known_hosts_are_upgraded():
    https = HttpsHosts(["k.test"])
    assert https.upgrade("http://k.test/p?q=1") == "https://k.test/p?q=1"
    assert https.upgrade("https://k.test/p") == "https://k.test/p"
    assert https.upgrade("http://o.test/p") == "http://o.test/p"
    assert https.upgrade("http://sub.k.test/p") == "http://sub.k.test/p"  # includeSubDomains is not followed
    assert HttpsHosts().upgrade("http://k.test/p") == "http://k.test/p"
