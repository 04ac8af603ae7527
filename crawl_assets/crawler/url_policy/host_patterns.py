"""Host-name patterns (fnmatch, as in the blocklist, resolver overrides and network
exceptions): one matching rule for every place that names hosts by pattern."""

from __future__ import annotations

from fnmatch import fnmatch


def host_matches(host: str, pattern: str) -> bool:
    """fnmatch, plus "*.example.test" also matching "example.test" itself."""
    host = host.lower()
    return fnmatch(host, pattern) or (pattern.startswith("*.") and host == pattern[2:])
