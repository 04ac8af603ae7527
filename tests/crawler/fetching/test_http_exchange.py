"""One HTTP exchange against canned bytes (a fake opener feeding asyncio streams): no network."""

import asyncio
import dataclasses
import ipaddress

from crawl_assets.crawler.fetching.clients import ConnectionFactory
from crawl_assets.crawler.fetching.http_exchange import HttpExchanger, header_map
from crawl_assets.crawler.fetching.resolver import DnsError, Resolver
from crawl_assets.crawler.fetching.visit_state import VisitState
from crawl_assets.crawler.settings import load_settings
from crawl_assets.crawler.url_policy.addresses import NetworkException
from crawl_assets.crawler.vocabulary import StatusClass

SETTINGS = dataclasses.replace(
    load_settings(use_env=False), max_body_bytes=1000, fetch_timeout_s=5.0,
    network_exceptions=(NetworkException(("*.test",), (ipaddress.ip_network("192.0.2.0/24"),)),))
RESOLVER = {"a.test": "192.0.2.7", "private.test": "10.0.0.1"}


class CannedConnection:
    """The writer half of a connection whose reader gets the next canned answer each time a
    request is written, and the end of the stream after the last one."""

    def __init__(self, reader: asyncio.StreamReader, answers: list[list[bytes]], sent: bytearray):
        self.reader, self.answers, self.sent = reader, answers, sent
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent += data
        for chunk in self.answers.pop(0) if self.answers else []:
            self.reader.feed_data(chunk)
        if not self.answers:
            self.reader.feed_eof()

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


class CannedServer:
    """Opens connections that answer with canned bytes; remembers what was sent and where."""

    def __init__(self, answers: list[list[bytes]]):
        self.answers = answers
        self.sent = bytearray()
        self.connected_to = []

    async def open(self, ip, port):
        self.connected_to.append((ip, port))
        reader = asyncio.StreamReader()
        return reader, CannedConnection(reader, self.answers, self.sent)


class NoDns(Resolver):
    """The overrides only: any other name fails as DNS would, without asking anyone."""

    async def resolve(self, host: str) -> str:
        if self.override_for(host) is None:
            raise DnsError(f"cannot resolve {host}: not in the test's table")
        return self.override_for(host)


def exchange(*answers: list[bytes], url="http://a.test/page?q=1", host="a.test", repeat=1, **kwargs):
    """GET url `repeat` times; each request is answered with the next of `answers` (lists of
    chunks), all over one connection unless the exchange opens another."""
    backend = CannedServer(list(answers))
    exchanger = HttpExchanger(SETTINGS, NoDns(RESOLVER), ConnectionFactory(backend.open))
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
    request = bytes(backend.sent)
    assert request.startswith(b"GET /page?q=1 HTTP/1.1\r\nHost: a.test\r\nUser-Agent: recrawl/")
    assert b"If-None-Match: \"v0\"\r\n" in request and b"Cookie" not in request
    assert b"\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n" in request  # every coding decoding.py undoes
    assert hop.exchange.request_head == request  # the request record's block: the bytes sent, as sent
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
    hops, backend = exchange([answer], [answer], repeat=2)
    assert [hop.exchange.body for hop in hops] == [b"ok", b"ok"]
    assert backend.connected_to == [("192.0.2.7", 80)]  # one connection for both


def test_chunked_close_delimited_and_informational_answers_are_read_whole():
    chunked, _ = exchange([b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                           b"3\r\nabc\r\n", b"2\r\nde\r\n0\r\n\r\n"])
    assert chunked.status == 200 and chunked.exchange.body == b"abcde"
    old, _ = exchange([b"HTTP/1.0 200 OK\r\n\r\nuntil the end"])
    assert old.exchange.body == b"until the end" and old.exchange.http_version == "HTTP/1.0"
    huge, _ = exchange([b"HTTP/1.1 200 OK\r\nX-Big: " + b"x" * 200_000 + b"\r\n\r\n"])
    assert huge.error_class == StatusClass.NETWORK_ERROR  # a head over 100 KiB is refused


def test_a_connection_the_server_closes_is_not_reused():
    close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    hops, backend = exchange([close], [close], repeat=2)
    assert [hop.exchange.body for hop in hops] == [b"ok", b"ok"]
    assert len(backend.connected_to) == 2


def test_odd_but_valid_answers_and_answers_refused():
    split, _ = exchange([b"HTT", b"P/1.1 2", b"00 O", b"K\r\nContent-Le", b"ngth: 3\r\n\r", b"\nabc"])
    assert (split.status, split.exchange.reason, split.exchange.body) == (200, "OK", b"abc")
    hints, _ = exchange([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"
                         b"HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nz"])
    assert (hints.status, hints.exchange.body, hints.exchange.response_headers) == (201, b"z", [("Content-Length", "1")])
    # Bytes after a complete answer: the answer stands, the connection is not reused.
    answers = [b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nqGARBAGE"], [b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nr"]
    hops, backend = exchange(*answers, repeat=2)
    assert [hop.exchange.body for hop in hops] == [b"q", b"r"] and len(backend.connected_to) == 2
    upgrade, _ = exchange([b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"])
    assert upgrade.error_class == StatusClass.NETWORK_ERROR and "Upgrade" in upgrade.error
    twice, _ = exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"])
    assert twice.error_class == StatusClass.NETWORK_ERROR and twice.exchange is None
    # A stored validator with a line break is not sent (it would add a header of its own).
    smuggled, backend = exchange([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
                                 extra_headers={"If-None-Match": '"a"\r\nX-Evil: 1'})
    assert smuggled.error_class == StatusClass.NETWORK_ERROR and b"X-Evil" not in bytes(backend.sent)


def test_a_request_head_is_sent_byte_for_byte_and_a_header_that_could_end_its_line_is_refused():
    import pytest

    from crawl_assets.crawler.fetching.clients import ProtocolError, request_bytes

    head = request_bytes("/p?q=1", [("Host", "a.test"), ("If-None-Match", '"v1"'), ("X-Empty", "")])
    assert head == b'GET /p?q=1 HTTP/1.1\r\nHost: a.test\r\nIf-None-Match: "v1"\r\nX-Empty: \r\n\r\n'
    for name, value in [("If-None-Match", '"v1"\r\nX-Smuggled: 1'), ("If-None-Match", "a\nb"),
                        ("If-None-Match", "a\0b"), ("X\rY", "v"), ("X\nY", "v"), ("X\0Y", "v"),
                        ("", "v"), ("X:Y", "v")]:
        with pytest.raises(ProtocolError, match="refusing to send the header"):
            request_bytes("/p", [("Host", "a.test"), (name, value)])


def test_an_answer_read_leaves_no_cycle_behind():
    """The parser and the reader of an answer refer to each other while it is read; once the
    answer is returned they are freed by reference counting, not left (body included) for the
    cycle collector: with collection off, none of them is still alive after a get, answered
    or refused."""
    import gc

    import httptools

    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    gc.collect()
    gc.disable()
    try:
        hops, _ = exchange([answer], [b"this is not HTTP\r\n\r\n"], repeat=2)
        parsers = [o for o in gc.get_objects() if isinstance(o, httptools.HttpResponseParser)]
    finally:
        gc.enable()
    assert [hop.status for hop in hops] == [200, None] and hops[1].error_class == StatusClass.NETWORK_ERROR
    assert parsers == []


def test_an_answer_whose_head_passes_its_cap_or_that_ends_early_is_refused_with_a_sentence_saying_so():
    """The head may take MAX_HEAD_BYTES and one read more (counted over every read, however
    small); an answer the server stops sending is said to be cut short."""
    from crawl_assets.crawler.fetching.clients import MAX_HEAD_BYTES, READ_CHUNK

    start = b"HTTP/1.1 200 OK\r\nX-Long: "
    at_cap = start + b"a" * (MAX_HEAD_BYTES + READ_CHUNK - len(start))  # the head unfinished, then the end
    closed, _ = exchange([at_cap[i:i + 1000] for i in range(0, len(at_cap), 1000)])
    assert closed.error_class == StatusClass.NETWORK_ERROR
    assert closed.error == "the server closed the connection before the answer was complete"
    over = at_cap + b"a"
    large, _ = exchange([over[i:i + 1000] for i in range(0, len(over), 1000)])
    assert large.error == f"the answer's head is larger than {MAX_HEAD_BYTES} bytes"
