"""The address guard: a crawler follows links strangers wrote, so by default it connects only
to globally routable addresses. Exceptions open named networks to named hosts only.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .host_patterns import host_matches

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class NetworkException:
    """Lets hosts matching `hosts` (fnmatch patterns) connect to `networks` despite the guard."""

    hosts: tuple[str, ...]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


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
