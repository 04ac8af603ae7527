"""Host name resolution for the fetcher: static overrides first, then the system resolver
through asyncio, with a small TTL cache so a host is looked up once per batch, not per page.
"""

from __future__ import annotations

import asyncio
import socket
import time

from ..url_policy.host_patterns import host_matches


class DnsError(OSError):
    pass


class Resolver:
    def __init__(self, overrides: dict[str, str] | None = None, ttl_s: float = 300.0,
                 timeout_s: float = 5.0):
        self._exact = {h: ip for h, ip in (overrides or {}).items() if "*" not in h}
        self._patterns = [(h, ip) for h, ip in (overrides or {}).items() if "*" in h]
        self._ttl_s = ttl_s
        self._timeout_s = timeout_s
        self._cache: dict[str, tuple[float, str | DnsError]] = {}
        self._overridden: dict[str, str | None] = {}  # host -> its override: asked every request

    def override_for(self, host: str) -> str | None:
        if host in self._overridden:
            return self._overridden[host]
        name = host.lower()
        override = self._exact.get(name)
        if override is None:
            override = next((ip for pattern, ip in self._patterns if host_matches(name, pattern)), None)
        if len(self._overridden) < 1 << 16:  # hosts of one batch; a runaway list is just not memoised
            self._overridden[host] = override
        return override

    async def resolve(self, host: str) -> str:
        """One IP address for host, or DnsError (failures are cached too)."""
        override = self.override_for(host)
        if override is not None:
            return override
        cached = self._cache.get(host)
        if cached and cached[0] > time.monotonic():
            if isinstance(cached[1], DnsError):
                raise cached[1]
            return cached[1]
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(
                loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), self._timeout_s)
            result: str | DnsError = infos[0][4][0]
        except (OSError, asyncio.TimeoutError, IndexError) as exc:
            result = DnsError(f"cannot resolve {host}: {exc or 'timeout'}")
        self._cache[host] = (time.monotonic() + self._ttl_s, result)
        if isinstance(result, DnsError):
            raise result
        return result
