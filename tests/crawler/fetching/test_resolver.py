import asyncio
import socket

import pytest

from crawl_assets.crawler.fetching.resolver import DnsError, Resolver


def test_overrides_win_and_wildcards_match_subdomains():
    resolver = Resolver({"*.demo.test": "127.0.0.1", "exact.test": "127.0.0.5"})
    assert asyncio.run(resolver.resolve("h0001.demo.test")) == "127.0.0.1"
    assert asyncio.run(resolver.resolve("EXACT.test")) == "127.0.0.5"
    assert resolver.override_for("demo.test.evil.com") is None
    # Asked again (answers are remembered per host name, as written): the same answers.
    for _ in range(2):
        assert [resolver.override_for(h) for h in ("H0001.Demo.Test", "exact.TEST", "demo.test.evil.com")] == \
            ["127.0.0.1", "127.0.0.5", None]


def test_answers_and_failures_are_cached(monkeypatch):
    calls = []

    async def fake_getaddrinfo(self, host, port, **kw):
        calls.append(host)
        if host == "bad.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 0))]

    # No real lookup leaves the machine: the event loop's getaddrinfo is replaced.
    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", fake_getaddrinfo)
    resolver = Resolver()

    async def lookups():
        assert await resolver.resolve("good.example") == "93.184.216.34"
        assert await resolver.resolve("good.example") == "93.184.216.34"
        for _ in range(2):
            with pytest.raises(DnsError, match="bad.example"):
                await resolver.resolve("bad.example")

    asyncio.run(lookups())
    assert calls == ["good.example", "bad.example"]
