"""A process-wide network guard for the benchmarks: loopback on one port, nothing else.

The benchmark crawlers follow links found in pages and Scrapy brings libraries of its own
(tldextract, for one, downloads the public suffix list when first used). Whatever the
settings say, once `install(port)` has run in a process, that process:

- connects only to 127.0.0.0/8 (or ::1) on `port`, the demo web's port: any other
  connect() raises PermissionError, connect_ex() returns EACCES;
- resolves no host name: getaddrinfo()/gethostbyname() answer IP literals and "localhost"
  only. Demo host names are answered by the crawlers' own resolvers (resolver_overrides for
  ours, bench/scrapy_peer.py's DemoResolver for Scrapy), never by the system resolver.

AF_UNIX sockets and socketpair() (event-loop wake-up pipes, multiprocessing) are untouched.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

_INET = (socket.AF_INET, socket.AF_INET6)


def _ip_literal(host) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return None


def install(port: int) -> None:
    """Refuse every connection but loopback:`port`, and every name lookup but IP literals."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo
    real_gethostbyname = socket.gethostbyname

    def refusal(sock: socket.socket, address) -> str | None:
        if sock.family not in _INET:
            return None
        ip = _ip_literal(address[0])
        if ip is None or not ip.is_loopback or address[1] != port:
            return f"bench network guard: refusing to connect to {address!r} (only loopback:{port})"
        return None

    def connect(self, address):
        reason = refusal(self, address)
        if reason:
            raise PermissionError(errno.EACCES, reason)
        return real_connect(self, address)

    def connect_ex(self, address):
        if refusal(self, address):
            return errno.EACCES
        return real_connect_ex(self, address)

    def check_name(host) -> None:
        if host is None or host in ("localhost", b"localhost") or _ip_literal(host) is not None:
            return
        raise socket.gaierror(socket.EAI_NONAME, f"bench network guard: not resolving {host!r}")

    def getaddrinfo(host, *args, **kwargs):
        check_name(host)
        return real_getaddrinfo(host, *args, **kwargs)

    def gethostbyname(host):
        check_name(host)
        return real_gethostbyname(host)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo
    socket.gethostbyname = gethostbyname
