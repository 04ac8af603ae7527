"""The address guard: a crawler follows links strangers wrote, so by default it connects only
to globally routable addresses. Exceptions open named networks to named hosts only.
"""

from __future__ import annotations

import ipaddress
from fnmatch import fnmatch

from .settings import NetworkException

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def host_matches(host: str, pattern: str) -> bool:
    """fnmatch, plus "*.example.test" also matching "example.test" itself."""
    host = host.lower()
    return fnmatch(host, pattern) or (pattern.startswith("*.") and host == pattern[2:])


def address_allowed(host: str, address: str, exceptions: tuple[NetworkException, ...] = ()) -> bool:
    ip: IPAddress = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    for exception in exceptions:
        if any(host_matches(host, p) for p in exception.hosts) and any(
            ip in net for net in exception.networks
        ):
            return True
    return ip.is_global and not ip.is_multicast
