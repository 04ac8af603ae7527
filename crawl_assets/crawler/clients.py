"""HTTP clients for the fetch engine: one small httpx client per host being fetched.

A single shared httpx pool scans every pooled connection on each request, so its cost per
fetch grows with the number of hosts in flight; a client per host keeps that cost flat. A
host's client is closed as soon as the host has nothing queued, so idle hosts hold nothing.
"""

from __future__ import annotations

import httpx


class ClientPool:
    def __init__(self, connect_timeout_s: float, read_timeout_s: float):
        # One TLS context for all clients: building one loads the CA bundle (milliseconds).
        self._ssl_context = httpx.create_ssl_context()
        self._timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._clients: dict[str, httpx.AsyncClient] = {}

    def client(self, host: str) -> httpx.AsyncClient:
        client = self._clients.get(host)
        if client is None:
            client = httpx.AsyncClient(
                verify=self._ssl_context,
                timeout=self._timeout,
                follow_redirects=False,  # the engine follows redirects itself, hop by hop
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                trust_env=False,  # no proxy from the environment: we connect where we checked
            )
            self._clients[host] = client
        return client

    def __len__(self) -> int:
        return len(self._clients)

    async def close(self, host: str) -> None:
        client = self._clients.pop(host, None)
        if client is not None:
            await client.aclose()

    async def close_all(self) -> None:
        for host in list(self._clients):
            await self.close(host)
