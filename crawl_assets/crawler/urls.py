"""URL normalisation: the one canonical form every comparison of URLs uses.

w3lib does the percent-encoding, dot segments and query sorting; on top we lowercase the
host, drop default ports, fragments and tracking parameters, and accept only http(s).
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PREFIXES = ("utm_",)
TRACKING_PARAMS = frozenset({"gclid", "fbclid", "msclkid", "mc_eid", "mc_cid", "dclid", "yclid"})


class UrlError(ValueError):
    """A URL that cannot be crawled; the message says why."""


def _is_tracking(param: str) -> bool:
    name = param.split("=", 1)[0].lower()
    return name in TRACKING_PARAMS or name.startswith(TRACKING_PREFIXES)


def normalize_url(url: str, base: str | None = None) -> str:
    """The canonical absolute form of `url` (resolved against `base`), or UrlError."""
    url = url.strip()
    if base is not None:
        url = urljoin(base, url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlError(f"unparsable URL {url!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UrlError(f"not an http(s) URL: {url!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UrlError(f"URL has no host: {url!r}")
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise UrlError(f"bad hostname in {url!r}: {exc}") from exc
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    query = "&".join(p for p in parts.query.split("&") if p and not _is_tracking(p))
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", query, ""))
    return canonicalize_url(rebuilt)


def host_of(url: str) -> str:
    """Lowercase hostname of a normalised URL (no port)."""
    return (urlsplit(url).hostname or "").lower()
