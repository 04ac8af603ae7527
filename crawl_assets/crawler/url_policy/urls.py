"""URL normalisation: the one canonical form every comparison of URLs uses.

`normalize_url(href, base)` turns any discovered href (absolute, or relative to `base`)
into the canonical absolute URL, or raises UrlError saying why it cannot be crawled.

Parsing follows the WHATWG URL Standard for the special schemes http and https, so a link
means here what it means in a browser:
  - leading and trailing C0 controls and spaces are stripped, tabs and newlines removed
    anywhere; a backslash counts as a slash; "http:example.com" is "http://example.com/"
    (but relative to an http page, "http:foo" is the relative path "foo");
  - only http and https are accepted; every other scheme is rejected;
  - the host is percent-decoded, mapped with IDNA (UTS #46, non-transitional, via `idna`)
    and punycoded; forbidden code points and bad "xn--" labels are rejected; hosts that
    end in a number are IPv4 addresses in any WHATWG form (0x7f.1 -> 127.0.0.1) or are
    rejected; IPv6 addresses are compressed and lowercased; an empty host is rejected;
  - a port must be decimal and at most 65535; the scheme's default port is dropped.

On top of that parse, the canonical form:
  - lowercase scheme and host; the one trailing dot of a fully qualified name is dropped
    ("example.com." -> "example.com");
  - userinfo is dropped: credentials are never fetched with, stored or logged;
  - the fragment is dropped;
  - `.` and `..` path segments are resolved (also when spelt "%2e", as in WHATWG);
  - w3lib's canonicalize_url does the rest of the path and query: percent-encoding
    normalised (UTF-8, uppercase hex, unreserved characters decoded), query parameters
    sorted (a bare key becomes "key=", spaces become "+");
  - tracking parameters (utm_*, gclid, fbclid, msclkid, mc_eid, ...) and session-id
    parameters (jsessionid, phpsessid, sid, sessionid, ...) are removed from the query,
    and session ids given as path parameters (";jsessionid=...") from the path.

Trailing-slash policy: the path is kept as given, slashes included ("/a" and "/a/" are
different URLs, and so are "/a//b" and "/a/b"); only an empty path becomes "/".

One URL per page across schemes: once the crawl knows a host serves its pages over https (it
redirected an http URL to its https twin, or sent Strict-Transport-Security: https_hosts.py
learns it, the fetch logs keep it), `upgrade_scheme` gives its http URLs as https, before any
comparison (the seen check, the queue, the registry, the frontier: UPGRADE_SQL is the same
rule for the steps' SQL). Protocol-relative links ("//host/p") take the page's scheme first.
"""

from __future__ import annotations

import re
from collections.abc import Container
from functools import lru_cache
from ipaddress import IPv6Address
from typing import NamedTuple
from urllib.parse import unquote, unquote_plus, urlsplit

import idna
from w3lib.url import canonicalize_url

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
TRACKING_PREFIXES = ("utm_",)
TRACKING_PARAMS = frozenset({
    "gclid", "gclsrc", "dclid", "gbraid", "wbraid",  # Google Ads
    "fbclid", "msclkid", "yclid", "twclid", "ttclid", "igshid", "li_fat_id",
    "mc_eid", "mc_cid",  # Mailchimp
    "_hsenc", "_hsmi", "mkt_tok", "_ga", "_gl",
})
SESSION_PARAMS = frozenset({
    "jsessionid", "phpsessid", "sid", "sessionid", "session_id", "sessid",
    "aspsessionid", "cfid", "cftoken", "oscsid", "zenid",
})


class UrlError(ValueError):
    """A URL that cannot be crawled; the message says why."""


class _Parts(NamedTuple):
    scheme: str
    netloc: str  # canonical host[:port]
    path: str  # as given, starts with "/"
    query: str | None  # as given, None when there is no "?"


def normalize_url(url: str, base: str | None = None) -> str:
    """The canonical absolute form of `url` (resolved against `base`), or UrlError."""
    return _canonical(_parse(_clean(url), base))


# --- the parts of a URL ------------------------------------------------------------------
# Every other module takes a URL apart with these. A normalised URL is cut with string methods
# (urlsplit is a cost on every request and every link); the rare forms it cannot have go to
# urlsplit.

def split_url(url: str) -> tuple[str, str, str]:
    """(scheme, authority, path and query) of a normalised URL, cut at "://" and the next "/":
    "http://a.test:81/p?q" gives ("http", "a.test:81", "/p?q"), "http://a.test" ("http", "a.test", "")."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return scheme, authority, slash + path


def host_of(url: str) -> str:
    """Lowercase hostname of a normalised URL (no port)."""
    netloc = split_url(url)[1]
    if "@" in netloc or "[" in netloc or "?" in netloc:  # rare forms: let urllib parse them
        return (urlsplit(url).hostname or "").lower()
    return netloc.partition(":")[0].lower()


def origin_of(url: str) -> str:
    """"scheme://host[:port]" of a normalised URL: where its robots.txt lives."""
    scheme, netloc, _ = split_url(url)
    return f"{scheme}://{netloc}"


def path_of(url: str) -> str:
    """The path of a normalised URL without its leading "/" and its query: "p/q" of "http://a.test/p/q?x"."""
    return split_url(url.partition("?")[0])[2][1:]


def request_parts(url: str) -> tuple[str, str, int, str]:
    """(scheme, netloc, port, request target) of an absolute URL, as urlsplit gives them: the
    plain form every normalised URL has by string methods, anything else by urlsplit."""
    scheme, netloc, target = split_url(url)
    if netloc and target and scheme in DEFAULT_PORTS and not _UNPLAIN.search(url) and not target.endswith("?"):
        name, colon, digits = netloc.partition(":")
        if not colon:
            return scheme, netloc, DEFAULT_PORTS[scheme], target
        if 0 < len(digits) <= 5 and digits.isascii() and digits.isdigit() and int(digits) <= 65535:
            return scheme, netloc, int(digits) or DEFAULT_PORTS[scheme], target
    parts = urlsplit(url)
    return (parts.scheme, parts.netloc, parts.port or DEFAULT_PORTS[parts.scheme],
            (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))


# What urlsplit would treat differently from plain slicing: userinfo, IPv6 literals, a "?"
# or "#" before the path, fragments, and the tabs and line breaks it strips; leading C0.
_UNPLAIN = re.compile(r"[@\[\]#\t\r\n\\]|^[\x00-\x20]|^[^/]*://[^/]*\?")


# --- parsing (WHATWG URL Standard, special schemes only) -------------------------------

_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_TAB_AND_NEWLINES = {0x09: None, 0x0A: None, 0x0D: None}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_SLASHES = ("/", "\\")
_AUTHORITY_END = re.compile(r"[/\\?#]")


def _clean(url: str) -> str:
    """Strip leading/trailing C0 controls and spaces, and tabs and newlines anywhere."""
    url = url.strip(_C0_AND_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.translate(_TAB_AND_NEWLINES)
    return url


def _parse(text: str, base: str | None) -> _Parts:
    match = _SCHEME.match(text)
    if match is None:
        if base is None:
            raise UrlError(f"relative URL without a base: {text!r}")
        return _resolve(text, _base_parts(base))
    scheme = match.group(1).lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UrlError(f"not an http(s) URL: {text!r}")
    rest = text[match.end():]
    # "http:foo" is relative to an http base (the scheme is merely repeated) ...
    if base is not None and rest[:2] != "//":
        base_parts = _base_parts(base)
        if base_parts.scheme == scheme:
            return _resolve(rest, base_parts)
    # ... otherwise the slashes after the scheme are optional, and extra ones ignored.
    return _authority_and_rest(scheme, rest.lstrip("/\\"))


@lru_cache(maxsize=1024)  # a page's links all share its URL as their base
def _base_parts(base: str) -> _Parts:
    try:
        return _parse(_clean(base), None)
    except UrlError as exc:
        raise UrlError(f"bad base URL: {exc}") from None


def _resolve(ref: str, base: _Parts) -> _Parts:
    """A relative reference (scheme already removed) resolved against a parsed base."""
    if ref[:1] in _SLASHES:
        if ref[1:2] in _SLASHES:  # "//host/...": the base's scheme, a new authority
            return _authority_and_rest(base.scheme, ref.lstrip("/\\"))
        path, query = _path_and_query(ref)
        return _Parts(base.scheme, base.netloc, path, query)
    path, query = _path_and_query(ref)
    if not path:  # "", "?q" or "#f": the base document itself
        return _Parts(base.scheme, base.netloc, base.path, base.query if query is None else query)
    directory = base.path[:base.path.rfind("/") + 1]
    return _Parts(base.scheme, base.netloc, directory + path, query)


def _authority_and_rest(scheme: str, text: str) -> _Parts:
    end = _AUTHORITY_END.search(text)
    authority, rest = (text, "") if end is None else (text[:end.start()], text[end.start():])
    path, query = _path_and_query(rest)
    return _Parts(scheme, _netloc(scheme, authority), path or "/", query)


def _path_and_query(rest: str) -> tuple[str, str | None]:
    rest = rest.partition("#")[0]
    path, question_mark, query = rest.partition("?")
    return path.replace("\\", "/"), (query if question_mark else None)


@lru_cache(maxsize=16384)  # hosts repeat: most links point to a few of them
def _netloc(scheme: str, authority: str) -> str:
    """Canonical "host[:port]" of an authority; its userinfo is dropped."""
    host_and_port = authority[authority.rfind("@") + 1:]
    if host_and_port.startswith("["):
        close = host_and_port.find("]")
        after = host_and_port[close + 1:]
        if close < 0 or after[:1] not in ("", ":"):
            raise UrlError(f"bad IPv6 host: {authority!r}")
        host, port = _ipv6_host(host_and_port[1:close]), after[1:]
    else:
        raw_host, _, port = host_and_port.partition(":")
        host = _host(raw_host)
    port_number = _port(port)
    if port_number is None or port_number == DEFAULT_PORTS[scheme]:
        return host
    return f"{host}:{port_number}"


def _port(text: str) -> int | None:
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        raise UrlError(f"bad port: {text!r}")
    number = int(text)
    if number > 65535:
        raise UrlError(f"port out of range: {text!r}")
    return number


# --- hosts -----------------------------------------------------------------------------

_FORBIDDEN_DOMAIN_CHARS = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")


def _host(raw: str) -> str:
    """WHATWG host parsing for http(s) (domain or IPv4), then the canonical spelling."""
    if "%" in raw:  # the host is percent-decoded as UTF-8 (bad bytes become U+FFFD)
        raw = unquote(raw, errors="replace")
    host = _ascii_host(raw)
    if not host:
        raise UrlError("empty host")
    if _FORBIDDEN_DOMAIN_CHARS.search(host):
        raise UrlError(f"forbidden character in host {host!r}")
    if _ends_in_number(host):
        return _ipv4(host)
    if host.endswith(".") and not host.endswith(".."):  # "example.com." is example.com
        host = host[:-1] or host
    return host


def _ascii_host(host: str) -> str:
    """UTS #46 mapping and punycode (WHATWG "domain to ASCII"); ASCII needs only lowercase."""
    if host.isascii():
        host = host.lower()
        if "xn--" in host:
            for label in host.split("."):
                _check_punycode_label(label)
        return host
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    except UnicodeError as exc:  # idna.IDNAError: a disallowed code point
        raise UrlError(f"bad hostname {host!r}: {exc}") from None
    labels = mapped.split(".")
    for i, label in enumerate(labels):
        if label.isascii():
            _check_punycode_label(label)
        else:
            labels[i] = "xn--" + label.encode("punycode").decode("ascii")
    return ".".join(labels)


def _check_punycode_label(label: str) -> None:
    """An "xn--" label must decode to a valid, non-ASCII Unicode label."""
    if not label.startswith("xn--"):
        return
    try:
        decoded = label[4:].encode("ascii").decode("punycode")
        valid = not decoded.isascii() and idna.uts46_remap(decoded, std3_rules=False) == decoded
    except UnicodeError:
        valid = False
    if not valid:
        raise UrlError(f"bad punycode label {label!r}")


_DIGITS = re.compile(r"[0-9]+\Z")
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_HEX = re.compile(r"0x[0-9a-f]*\Z")
_OCTAL = re.compile(r"0[0-7]+\Z")


def _ends_in_number(host: str) -> bool:
    """WHATWG: a host whose last label (bar one trailing dot) is a number is IPv4."""
    last = (host[:-1] if host.endswith(".") else host).rpartition(".")[2]
    return bool(_DIGITS.match(last) or _HEX.match(last))


def _ipv4(host: str) -> str:
    """Dotted-decimal form of a WHATWG IPv4 host: 1 to 4 decimal, octal or hex parts."""
    parts = host.split(".")
    if parts[-1] == "":
        parts.pop()
    numbers = [_ipv4_number(part, host) for part in parts]
    if len(numbers) > 4 or any(n > 255 for n in numbers[:-1]) \
            or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise UrlError(f"bad IPv4 address {host!r}")
    value = numbers[-1]
    for i, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - i))
    return ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))


def _ipv4_number(part: str, host: str) -> int:
    if _HEX.match(part):
        return int(part[2:] or "0", 16)
    if _OCTAL.match(part):
        return int(part, 8)
    if _DECIMAL.match(part):
        return int(part)
    raise UrlError(f"bad IPv4 address {host!r}")


def _ipv6_host(text: str) -> str:
    if "%" in text:  # Python accepts a zone id ("fe80::1%eth0"); URLs do not
        raise UrlError(f"bad IPv6 address {text!r}")
    try:
        return f"[{IPv6Address(text).compressed}]"
    except ValueError:
        raise UrlError(f"bad IPv6 address {text!r}") from None


# --- the canonical form -----------------------------------------------------------------

_SESSION_PATH_PARAM = re.compile(
    r";(?:" + "|".join(sorted(SESSION_PARAMS)) + r")=[^/;]*", re.IGNORECASE)
_MAYBE_DOT_SEGMENT = re.compile(r"/(?:\.|%2e)", re.IGNORECASE)
_DOT_SPELLINGS = {"%2e": ".", ".%2e": "..", "%2e.": "..", "%2e%2e": ".."}  # WHATWG: %2e is "."
_ESCAPE_C0_AND_SPACE = {c: f"%{c:02X}" for c in range(0x21)}
# A netloc _netloc made of lowercase ASCII names (no IPv6, no IDNA work left): w3lib keeps it.
_PLAIN_NETLOC = re.compile(r"[a-z0-9.\-]+(?::[0-9]+)?\Z")


def _canonical(parts: _Parts) -> str:
    path = parts.path
    if ";" in path:
        path = _SESSION_PATH_PARAM.sub("", path)
    if _MAYBE_DOT_SEGMENT.search(path):  # here, not in w3lib: only its newest releases do it
        path = _resolve_dots([_DOT_SPELLINGS.get(segment.lower(), segment)
                              for segment in path.split("/")])
    url = f"{parts.scheme}://{parts.netloc}{path}"
    if not parts.query and _PLAIN_NETLOC.match(parts.netloc) and _PLAIN_PATH.match(path) \
            and "//" not in path and "/." not in path:
        return url  # nothing for canonicalize_url to change (most links; it is the costly part)
    if parts.query:
        query = "&".join(p for p in parts.query.split("&") if p and not _is_tracking(p))
        if query:
            url = f"{url}?{query}"
    if url[-1] <= " ":  # w3lib would strip it as if it were outside the URL
        url = url.translate(_ESCAPE_C0_AND_SPACE)
    return canonicalize_url(url)


def _is_tracking(param: str) -> bool:
    """A tracking or session-id query parameter: it does not change the page."""
    name = param.partition("=")[0]
    if "%" in name or "+" in name:
        name = unquote_plus(name)
    name = name.lower()
    return name in TRACKING_PARAMS or name in SESSION_PARAMS or name.startswith(TRACKING_PREFIXES)


# --- resolving links fast ------------------------------------------------------------
# A page has dozens of links and most are plain paths ("/p/7.html", "../a/b.html") or
# absolute URLs seen many times before. Those take a fast path that gives exactly what
# normalize_url would (tests compare the two); everything else goes through normalize_url.

_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~/]+\Z")
_ABSOLUTE_CACHE: dict[str, str | None] = {}
_ABSOLUTE_CACHE_MAX = 100_000


def _resolve_dots(segments: list[str]) -> str:
    """RFC 3986 dot-segment removal of a path split on "/" (it starts with "")."""
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
    """normalize_url(href, page_url) for a page URL that is already normalised (the slow way
    for one that is not), or UrlError."""
    href = _clean(href).partition("#")[0]
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
    if path_start < 0:  # no path ("http://a.test"): not normalised, its origin is not cut at -1
        return normalize_url(href, page_url)
    origin = page_url[:path_start]
    # No "." or ".." segment (none starts with a dot; a normalised page URL has none either):
    # nothing to resolve, the href is the path or is appended to the page's directory.
    dot_free = href[:1] != "." and "/." not in href
    if href.startswith("/"):
        if dot_free:
            return origin + href
        segments = href.split("/")
    else:
        base_path = page_url[path_start:].partition("?")[0]
        if dot_free:
            return origin + base_path[:base_path.rfind("/") + 1] + href
        segments = base_path.split("/")[:-1] + href.split("/")
    return origin + _resolve_dots(segments)


# --- one URL per page across schemes ----------------------------------------------------

def https_twin(url: str) -> str | None:
    """The https URL of a normalised http URL (same host, path and query; http's default port
    becomes https's, another port is kept, as RFC 6797 8.3 says); None for any other URL."""
    return "https://" + url[7:] if url.startswith("http://") else None


def upgrade_scheme(url: str, https_hosts: Container[str]) -> str:
    """`url` over https when it is an http URL of a host in https_hosts; `url` otherwise."""
    if url[:7] == "http://" and https_hosts and host_of(url) in https_hosts:
        return "https://" + url[7:]
    return url


def https_twin_sql(url: str) -> str:
    """https_twin as a DuckDB expression over the column `url` (NULL for a URL that is not http)."""
    return f"CASE WHEN starts_with({url}, 'http://') THEN 'https://' || {url}[8:] END"


def upgrade_sql(url: str) -> str:
    """upgrade_scheme as a DuckDB expression over the column `url`, for a connection that has a
    table https_hosts(host) (the host of a normalised http URL: up to its port or path)."""
    return (f"CASE WHEN starts_with({url}, 'http://') AND regexp_extract({url}, '^http://([^/:]+)', 1) "
            f"IN (SELECT host FROM https_hosts) THEN 'https://' || {url}[8:] ELSE {url} END")
