"""One HTTP request and its answer: resolve, check the address, GET, stream the body under a
size cap and a total time limit. No retries and no redirects here: the engine decides those."""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlsplit

import httpx

from .addresses import address_allowed
from .clients import ClientPool
from .resolver import DnsError, Resolver
from .settings import CrawlSettings
from .urls import DEFAULT_PORTS
from .warc import Exchange


@dataclass
class HopResult:
    """What one request produced: an answer (`exchange`), or an error class saying why not."""

    url: str
    started_at: datetime
    elapsed_s: float = 0.0
    ip: str | None = None
    contacted: bool = False  # a connection to the host was attempted
    exchange: Exchange | None = None
    headers: httpx.Headers | None = None
    truncated: bool = False
    error_class: str | None = None  # dns_error, blocked_address, timeout, connect_error, network_error
    error: str | None = None

    @property
    def status(self) -> int | None:
        return self.exchange.status if self.exchange else None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


class HttpFetcher:
    def __init__(self, settings: CrawlSettings, resolver: Resolver, clients: ClientPool):
        self.settings = settings
        self.resolver = resolver
        self.clients = clients

    async def get(self, url: str, host: str, extra_headers: dict[str, str] | None = None,
                  limit: int | None = None) -> HopResult:
        result = HopResult(url=url, started_at=datetime.now(timezone.utc))
        started = time.monotonic()
        try:
            ip = await self.resolver.resolve(host)
        except DnsError as exc:
            result.error_class, result.error = "dns_error", str(exc)
            return result
        result.ip = ip
        if not address_allowed(host, ip, self.settings.network_exceptions):
            result.error_class = "blocked_address"
            result.error = f"{host} resolves to {ip}, which is not a public address"
            return result
        result.contacted = True
        try:
            await asyncio.wait_for(self._exchange(result, host, ip, extra_headers or {},
                                                  limit or self.settings.max_body_bytes),
                                   self.settings.fetch_timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            result.error_class = "timeout"
            result.error = f"no complete answer within the time limit ({type(exc).__name__})"
        except httpx.ConnectError as exc:
            result.error_class, result.error = "connect_error", str(exc) or type(exc).__name__
        except (httpx.HTTPError, OSError) as exc:
            result.error_class, result.error = "network_error", str(exc) or type(exc).__name__
        result.elapsed_s = time.monotonic() - started
        return result

    async def _exchange(self, result: HopResult, host: str, ip: str,
                        extra_headers: dict[str, str], limit: int) -> None:
        parts = urlsplit(result.url)
        port = parts.port or DEFAULT_PORTS[parts.scheme]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        ip_literal = f"[{ip}]" if ":" in ip else ip
        headers = {
            "Host": parts.netloc,
            "User-Agent": self.settings.user_agent,
            "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate, br",
            **extra_headers,
        }
        # Connect to the address that passed the check, never to a second lookup's answer.
        client = self.clients.client(host)
        async with client.stream("GET", f"{parts.scheme}://{ip_literal}:{port}{target}",
                                 headers=headers, extensions={"sni_hostname": host}) as resp:
            body = bytearray()
            async for chunk in resp.aiter_raw():
                body += chunk
                if len(body) > limit:
                    result.truncated = True
                    del body[limit:]
                    break
            result.headers = resp.headers
            result.exchange = Exchange(
                url=result.url, ip=ip, fetched_at=result.started_at, method="GET",
                request_target=target,
                request_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.request.headers.raw],
                http_version=resp.http_version, status=resp.status_code, reason=resp.reason_phrase,
                response_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.headers.raw],
                body=bytes(body), truncated=result.truncated,
            )
