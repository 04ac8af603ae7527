"""URL normalisation: the one canonical form every comparison of URLs uses.

w3lib does the percent-encoding, dot segments and query sorting; on top we lowercase the
host, drop default ports, fragments and tracking parameters, and accept only http(s).
"""

from __future__ import annotations

import re
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
    netloc = url.partition("://")[2].partition("/")[0]
    if "@" in netloc or "[" in netloc or "?" in netloc:  # rare forms: let urllib parse them
        return (urlsplit(url).hostname or "").lower()
    return netloc.partition(":")[0].lower()


# --- resolving links fast ------------------------------------------------------------
# A page has dozens of links and most are plain paths ("/p/7.html", "../a/b.html") or
# absolute URLs seen many times before. Those take a fast path that gives exactly what
# normalize_url would (tests compare the two); everything else goes through normalize_url.

_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~/]+\Z")
_ABSOLUTE_CACHE: dict[str, str | None] = {}
_ABSOLUTE_CACHE_MAX = 100_000


def _resolve_dots(segments: list[str]) -> str:
    """RFC 3986 dot-segment removal, as urllib.parse.urljoin does it."""
    resolved: list[str] = []
    for segment in segments:
        if segment == "..":
            if len(resolved) > 1:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    if segments[-1] in (".", ".."):
        resolved.append("")
    return "/".join(resolved) or "/"


def resolve_href(href: str, page_url: str) -> str:
    """normalize_url(href, page_url) for a page URL that is already normalised, or UrlError."""
    href = href.strip().partition("#")[0]
    if href[:2] == "//" and href[2:3].isalnum():  # "//host/...": the page's scheme, then absolute
        href = page_url[:page_url.index(":") + 1] + href
    if href.startswith(("http://", "https://")):
        cached = _ABSOLUTE_CACHE.get(href, False)
        if cached is False:
            try:
                cached = normalize_url(href)
            except UrlError:
                cached = None
            if len(_ABSOLUTE_CACHE) >= _ABSOLUTE_CACHE_MAX:
                _ABSOLUTE_CACHE.clear()
            _ABSOLUTE_CACHE[href] = cached
        if cached is None:
            raise UrlError(f"cannot crawl link {href!r}")
        return cached
    if not _PLAIN_PATH.match(href) or "//" in href:  # (also catches odd "//" references)
        return normalize_url(href, page_url)
    scheme_end = page_url.index("://") + 3
    path_start = page_url.find("/", scheme_end)
    origin = page_url[:path_start]
    if href.startswith("/"):
        segments = href.split("/")
    else:
        base_path = page_url[path_start:].partition("?")[0]
        segments = base_path.split("/")[:-1] + href.split("/")
    return origin + _resolve_dots(segments)
