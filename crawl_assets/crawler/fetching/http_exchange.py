"""One HTTP exchange: resolve the host, check the address, send one GET over the host's
connection (clients.py), read the answer under a size cap and a total time limit. No
retries and no redirects here: answer_policy.py says what an answer means, the engine acts
on it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone

from ..archive.warc import Exchange
from ..settings import CrawlSettings
from ..url_policy.addresses import address_allowed
from ..url_policy.urls import request_parts
from ..vocabulary import StatusClass
from .clients import ConnectFailed, ConnectionFactory, ProtocolError
from .clock import LoopStalls, ServerTimeLimit
from .resolver import DnsError, Resolver
from .visit_state import VisitState

ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"
ACCEPT_ENCODING = "gzip, deflate, br, zstd"  # what content/decoding.py undoes


@dataclass(frozen=True)
class HopResult:
    """What one request produced: an answer (`exchange`), or an error class saying why not."""

    url: str
    started_at: datetime
    elapsed_s: float = 0.0
    ip: str | None = None
    contacted: bool = False  # a connection to the host was attempted
    exchange: Exchange | None = None
    headers: dict[str, str] | None = None  # the answer's headers by lower-case name
    truncated: bool = False  # the body passed the size cap and was cut there
    # DNS_ERROR, BLOCKED_ADDRESS, CONNECT_ERROR, CONNECT_TIMEOUT, a TLS failure, TIMEOUT, NETWORK_ERROR
    error_class: StatusClass | None = None
    error: str | None = None

    @property
    def status(self) -> int | None:
        return self.exchange.status if self.exchange else None

    def header(self, name: str) -> str | None:
        """A response header by lower-case name (repeated headers joined with ", ")."""
        return self.headers.get(name) if self.headers else None


def header_map(raw: list[tuple[str, str]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in raw:
        name = name.lower()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


# A whole-fetch limit that expires before the connection is made is named for what it cut short.
_CUT_SHORT = {"connect": StatusClass.CONNECT_TIMEOUT, "handshake": StatusClass.TLS_HANDSHAKE_TIMEOUT}


class HttpExchanger:
    def __init__(self, settings: CrawlSettings, resolver: Resolver, connections: ConnectionFactory,
                 stalls: LoopStalls | None = None):
        """stalls: the engine's measure of its event loop's stalls, which no time limit counts
        against a server (clock.py)."""
        self.settings = settings
        self.resolver = resolver
        self.connections = connections
        if stalls is not None:
            connections.stalls = stalls
        self.stalls = connections.stalls
        self._allowed: dict[tuple[str, str], bool] = {}  # (host, address) -> may it be asked

    async def get(self, url: str, state: VisitState, extra_headers: dict[str, str] | None = None,
                  limit: int | None = None) -> HopResult:
        """GET url from state.host (over state.connection, opened if needed)."""
        host = state.host
        started_at = datetime.now(timezone.utc)
        started = time.monotonic()
        try:
            ip = await self.resolver.resolve(host)
        except DnsError as exc:
            return HopResult(url, started_at, error_class=StatusClass.DNS_ERROR, error=str(exc))
        allowed = self._allowed.get((host, ip))
        if allowed is None:  # a host keeps its address: checked once, not once per request
            allowed = self._allowed[(host, ip)] = address_allowed(host, ip, self.settings.network_exceptions)
        if not allowed:
            return HopResult(url, started_at, ip=ip, error_class=StatusClass.BLOCKED_ADDRESS,
                             error=f"{host} resolves to {ip}, which is not a public address")
        if state.connection is None:
            state.connection = self.connections.new_connection()
        scheme, netloc, port, target = request_parts(url)
        request_headers = [("Host", netloc), ("User-Agent", self.settings.user_agent),
                           ("Accept", ACCEPT), ("Accept-Encoding", ACCEPT_ENCODING), *(extra_headers or {}).items()]
        error_class = error = None
        answer = None
        connection = state.connection
        try:
            # Connect to the address that passed the check, never to a second lookup's answer.
            async with ServerTimeLimit(self.settings.fetch_timeout_s, self.stalls):  # no extra task, unlike wait_for
                answer = await connection.get(
                    scheme, ip, port, host, target, request_headers,
                    limit or self.settings.max_body_bytes, self.settings.connect_timeout_s)
        except TimeoutError:
            error_class = _CUT_SHORT.get(connection.phase, StatusClass.TIMEOUT)
            error = (f"no complete answer within fetch_timeout_s ({self.settings.fetch_timeout_s:g} s)"
                     if error_class == StatusClass.TIMEOUT else f"fetch_timeout_s passed in the {connection.phase}")
        except ConnectFailed as exc:
            error_class, error = exc.status_class, str(exc)
        except (ProtocolError, OSError) as exc:
            error_class, error = StatusClass.NETWORK_ERROR, str(exc) or type(exc).__name__
        elapsed = time.monotonic() - started
        if answer is None:
            return HopResult(url, started_at, elapsed, ip, True, error_class=error_class, error=error)
        exchange = Exchange(
            url=url, ip=ip, fetched_at=started_at, method="GET", request_target=target,
            request_headers=request_headers, http_version=answer.http_version, status=answer.status,
            reason=answer.reason, response_headers=answer.headers, body=answer.body,
            truncated=answer.truncated, request_head=answer.request)
        return HopResult(url, started_at, elapsed, ip, True, exchange, header_map(answer.headers), answer.truncated)
