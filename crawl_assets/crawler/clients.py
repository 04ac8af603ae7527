"""HTTP connections for the fetch engine: one small httpcore connection pool per host being
fetched, kept in the host's VisitState.

httpcore, not httpx: the engine needs neither cookies, auth, redirects nor URL building,
and httpx's layers over httpcore cost about a third of the HTTP time per page. A single
shared pool scans every pooled connection on each request, so its cost per fetch grows with
the number of hosts in flight; a pool per host keeps that cost flat. The engine closes a
host's pool as soon as the host has nothing queued, so idle hosts hold nothing.
"""

from __future__ import annotations

import httpcore

from .socket_backend import AsyncioBackend


class ConnectionFactory:
    def __init__(self, network_backend: httpcore.AsyncNetworkBackend | None = None):
        """network_backend: where bytes go (default: sockets through asyncio, socket_backend.py;
        tests pass httpcore.AsyncMockBackend with canned answers)."""
        self._ssl_context = None  # built on the first https host: loading the CA bundle costs ms
        self._backend = network_backend or AsyncioBackend()

    def new_pool(self, https: bool) -> httpcore.AsyncConnectionPool:
        """One keep-alive connection to one host, no retries (the engine decides those)."""
        if https and self._ssl_context is None:
            import ssl

            import certifi

            self._ssl_context = ssl.create_default_context(cafile=certifi.where())
        return httpcore.AsyncConnectionPool(
            ssl_context=self._ssl_context,  # None: httpcore builds its own if ever needed
            max_connections=1, max_keepalive_connections=1,
            network_backend=self._backend,
        )
