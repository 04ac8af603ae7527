"""One HTTP exchange against canned bytes (httpcore's mock network backend): no network."""

import asyncio
import dataclasses
import ipaddress

import httpcore

from crawl_assets.crawler.addresses import NetworkException
from crawl_assets.crawler.clients import ConnectionFactory
from crawl_assets.crawler.http_exchange import HttpExchanger, header_map
from crawl_assets.crawler.resolver import DnsError, Resolver
from crawl_assets.crawler.settings import load_settings
from crawl_assets.crawler.visit_state import VisitState
from crawl_assets.crawler.vocabulary import StatusClass

SETTINGS = dataclasses.replace(
    load_settings(use_env=False), max_body_bytes=1000, fetch_timeout_s=5.0,
    network_exceptions=(NetworkException(("*.test",), (ipaddress.ip_network("192.0.2.0/24"),)),))
RESOLVER = {"a.test": "192.0.2.7", "private.test": "10.0.0.1"}


class RecordingBackend(httpcore.AsyncMockBackend):
    """Canned answer bytes; remembers the bytes the exchange wrote."""

    def __init__(self, answer: list[bytes]):
        super().__init__(answer)
        self.written = bytearray()
        self.connected_to = []

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        self.connected_to.append((host, port))
        stream = await super().connect_tcp(host, port, timeout, local_address, socket_options)
        backend = self

        class Recording(type(stream)):
            async def write(self, buffer, timeout=None):
                backend.written += buffer

        recording = Recording(stream._buffer)
        return recording


class NoDns(Resolver):
    """The overrides only: any other name fails as DNS would, without asking anyone."""

    async def resolve(self, host: str) -> str:
        if self.override_for(host) is None:
            raise DnsError(f"cannot resolve {host}: not in the test's table")
        return self.override_for(host)


def exchange(answer: list[bytes], url="http://a.test/page?q=1", host="a.test", repeat=1, **kwargs):
    backend = RecordingBackend(answer)
    exchanger = HttpExchanger(SETTINGS, NoDns(RESOLVER), ConnectionFactory(backend))
    state = VisitState(host)

    async def go():
        try:
            return [await exchanger.get(url, state, **kwargs) for _ in range(repeat)]
        finally:
            if state.connection is not None:
                await state.connection.aclose()

    hops = asyncio.run(go())
    return (hops[0] if repeat == 1 else hops), backend


def test_a_get_goes_to_the_checked_address_with_our_headers_and_records_both_sides():
    body = b"<html>hello</html>"
    hop, backend = exchange([b"HTTP/1.1 200 OK\r\n", b"Content-Type: text/html\r\n",
                             b"ETag: \"v1\"\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n",
                             f"Content-Length: {len(body)}\r\n\r\n".encode(), body],
                            extra_headers={"If-None-Match": '"v0"'})
    assert backend.connected_to == [("192.0.2.7", 80)]  # the resolved address, never a second lookup
    request = bytes(backend.written)
    assert request.startswith(b"GET /page?q=1 HTTP/1.1\r\nHost: a.test\r\nUser-Agent: recrawl/")
    assert b"If-None-Match: \"v0\"\r\n" in request and b"Cookie" not in request
    assert hop.status == 200 and hop.exchange.body == body and not hop.truncated
    assert hop.ip == "192.0.2.7" and hop.contacted and hop.error_class is None
    assert hop.header("content-type") == "text/html" and hop.header("set-cookie") == "a=1, b=2"
    assert hop.exchange.request_target == "/page?q=1" and hop.exchange.http_version == "HTTP/1.1"
    assert ("If-None-Match", '"v0"') in hop.exchange.request_headers
    assert ("ETag", '"v1"') in hop.exchange.response_headers  # as sent, case kept


def test_a_body_over_the_cap_is_cut_at_the_cap_and_marked():
    hop, _ = exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", b"x" * 3000, b"y" * 2000])
    assert hop.truncated and len(hop.exchange.body) == SETTINGS.max_body_bytes and hop.exchange.truncated
    small, _ = exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", b"x" * 5000], limit=10)
    assert small.exchange.body == b"x" * 10


def test_refusals_and_failures_become_error_classes_without_a_traceback():
    blocked, backend = exchange([], url="http://private.test/", host="private.test")
    assert blocked.error_class == StatusClass.BLOCKED_ADDRESS and not blocked.contacted
    assert backend.connected_to == []  # refused before any connection
    unknown, _ = exchange([], url="http://nowhere.invalid/", host="nowhere.invalid")
    assert unknown.error_class == StatusClass.DNS_ERROR and not unknown.contacted
    garbage, _ = exchange([b"this is not HTTP\r\n\r\n"])
    assert garbage.error_class == StatusClass.NETWORK_ERROR and garbage.contacted and garbage.exchange is None
    cut, _ = exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"short"])
    assert cut.error_class == StatusClass.NETWORK_ERROR  # the server closed mid-body


def test_header_map_joins_repeated_headers_by_lower_case_name():
    assert header_map([("A", "1"), ("a", "2"), ("B", "3")]) == {"a": "1, 2", "b": "3"}


def test_a_hosts_requests_share_one_kept_alive_connection():
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    hops, backend = exchange([answer, answer], repeat=2)
    assert [hop.exchange.body for hop in hops] == [b"ok", b"ok"]
    assert backend.connected_to == [("192.0.2.7", 80)]  # one connection for both
