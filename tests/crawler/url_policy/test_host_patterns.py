"""Host-name patterns (crawler/url_policy/host_patterns.py), the one rule of the blocklist's
hosts, the resolver's overrides and the network exceptions."""

import pytest

from crawl_assets.crawler.url_policy.host_patterns import host_matches


@pytest.mark.parametrize("host, pattern, matches", [
    ("a.example.test", "*.example.test", True),
    ("example.test", "*.example.test", True),  # "*." names the domain itself too
    ("EXAMPLE.test", "*.example.test", True),  # host names are case-insensitive
    ("Www.Example.Test", "*.example.test", True),
    ("badexample.test", "*.example.test", False),  # "*." stands for whole labels
    ("xample.test", "*.example.test", False),
    ("example.test.evil", "*.example.test", False),
    ("example.test", "example.test", True),
    ("EXAMPLE.TEST", "example.test", True),
    ("a.example.test", "example.test", False),
    ("h0001.demo.test", "h*.demo.test", True),
    ("demo.test", "h*.demo.test", False),  # only "*." names the domain itself
    ("example.test", "?.example.test", False),
    ("x.test", "*", True),
])
def test_a_host_matches_a_pattern_as_fnmatch_says_and_star_dot_names_the_domain_itself(host, pattern, matches):
    assert host_matches(host, pattern) is matches
