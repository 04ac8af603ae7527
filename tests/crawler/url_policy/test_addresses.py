"""The address guard, checked on addresses alone: no connection is ever attempted here."""

import ipaddress

import pytest

from crawl_assets.crawler.settings import NetworkException
from crawl_assets.crawler.url_policy.addresses import address_allowed


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.8.9.10", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
    "0.0.0.0", "100.64.0.1", "224.0.0.1", "240.0.0.1", "255.255.255.255",
    "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "ff02::1",
])
def test_non_public_addresses_are_refused(address):
    assert not address_allowed("example.com", address)


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111"])
def test_public_addresses_are_allowed(address):
    assert address_allowed("example.com", address)


def test_exceptions_are_scoped_to_named_hosts():
    demo = (NetworkException(hosts=("*.demo.test",), networks=(ipaddress.ip_network("127.0.0.0/8"),)),)
    assert address_allowed("h0001.demo.test", "127.0.0.1", demo)
    assert not address_allowed("127.0.0.1", "127.0.0.1", demo)  # a bare IP link stays refused
    assert not address_allowed("evil.test", "127.0.0.1", demo)
    assert not address_allowed("h0001.demo.test", "10.0.0.1", demo)  # only the named network
