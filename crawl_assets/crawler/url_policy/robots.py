"""robots.txt (RFC 9309), read the way Google's reference parser (google/robotstxt) reads it.

parse_robots() turns one robots.txt body into a RobotsPolicy for our user agent: the rules
of every group naming our product token (or of the `*` groups when none does), that group's
Crawl-delay / Request-rate / Visit-time, and the file-wide Sitemap and Host lines.
policy_from_response() applies the RFC's rules for unavailable and unreachable files, and
robots_ttl() says how long a policy is kept. No I/O happens here: the fetch engine fetches
robots.txt hop by hop, each hop in its own host's turn, and keeps the rules in the host's
VisitState.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import time as TimeOfDay
from typing import NamedTuple

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309: parse at least 500 KiB; we cap there
# Google cuts each line at 8 x 2083 bytes (2083: the longest URL old browsers took) minus
# room for its terminating NUL; the rest of a longer line is dropped, not wrapped.
MAX_LINE_BYTES = 2083 * 8 - 1

# RobotsPolicy.source values, written to the fetch log.
PARSED = "parsed"
ALLOW_ALL_4XX = "allow_all_4xx"
ALLOW_ALL_3XX = "allow_all_3xx"  # redirects not followed to the end: "unavailable"
DISALLOW_ALL_429 = "disallow_all_429"
DISALLOW_ALL_5XX = "disallow_all_5xx"
DISALLOW_ALL_UNREACHABLE = "disallow_all_unreachable"
# Results that say nothing about the site's wishes, only that we could not learn them now:
# they are cached briefly so the host is asked again soon.
TRANSIENT_SOURCES = frozenset({DISALLOW_ALL_429, DISALLOW_ALL_5XX, DISALLOW_ALL_UNREACHABLE})

# Canonical record keys.
USER_AGENT = "user-agent"
ALLOW = "allow"
DISALLOW = "disallow"
SITEMAP = "sitemap"
CRAWL_DELAY = "crawl-delay"
REQUEST_RATE = "request-rate"
VISIT_TIME = "visit-time"
HOST = "host"
KNOWN_KEYS = frozenset({USER_AGENT, ALLOW, DISALLOW, SITEMAP, CRAWL_DELAY, REQUEST_RATE,
                        VISIT_TIME, HOST})
# Lines that belong to a group; the first user-agent line after one of them opens a new group.
# Sitemap, Host and unknown lines do not end a group (RFC 9309 and Google alike).
_GROUP_MEMBER_KEYS = frozenset({ALLOW, DISALLOW, CRAWL_DELAY, REQUEST_RATE, VISIT_TIME})

# The RFC keys are matched as prefixes, typos included, as Google does: real files have them.
_KEY_PREFIXES: tuple[tuple[str, tuple[bytes, ...]], ...] = (
    (USER_AGENT, (b"user-agent", b"useragent", b"user agent")),
    (ALLOW, (b"allow",)),
    (DISALLOW, (b"disallow", b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw")),
    (SITEMAP, (b"sitemap", b"site-map")),
)
# Non-standard extensions are matched exactly, with the spellings Protego accepts.
_EXTENSION_KEYS: dict[bytes, str] = {
    b"crawl-delay": CRAWL_DELAY, b"crawl delay": CRAWL_DELAY,
    b"request-rate": REQUEST_RATE, b"request rate": REQUEST_RATE,
    b"visit-time": VISIT_TIME, b"visit time": VISIT_TIME,
    b"host": HOST,
}

_BOM = b"\xef\xbb\xbf"
_ASCII_SPACE = b" \t\n\r\f\v"  # only ASCII whitespace is stripped, never e.g. a stray BOM
_BLANKS = re.compile(rb"[ \t]+")
_HEX_ESCAPE_BYTES = re.compile(rb"%[0-9A-Fa-f]{2}")
_HEX_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_HIGH_BYTE = re.compile(r"[\x80-\xff]")
_AGENT_NAME = re.compile(r"[A-Za-z_-]*")
_PATH_START = re.compile(r"[/?;]")


# ---- user agents ---------------------------------------------------------------------

def product_token(user_agent: str) -> str:
    """The name robots.txt groups are matched against: "recrawl/0.1 (+https://...)" -> "recrawl".

    Only the leading [a-zA-Z_-] characters count (RFC 9309 §2.2.1, as Google reads it).
    """
    return _AGENT_NAME.match(user_agent.strip()).group()


def is_valid_product_token(token: str) -> bool:
    """True if token is non-empty and made only of [a-zA-Z_-] (Google's IsValidUserAgentToObey)."""
    return bool(token) and _AGENT_NAME.match(token).group() == token


def _names_everyone(value: str) -> bool:
    # Google: "*" alone or followed by whitespace ("* # all bots" after comment removal).
    return value[:1] == "*" and (len(value) == 1 or value[1] in " \t\n\r\f\v")


# ---- lines and records -----------------------------------------------------------------

class RobotsRecord(NamedTuple):
    """One "key: value" line. key is canonical (see KNOWN_KEYS) or the unknown key lower-cased;
    Allow/Disallow values are already percent-normalised (escape_pattern)."""
    line: int
    key: str
    value: str


def escape_pattern(value: str | bytes) -> str:
    """Normalise a rule pattern's percent-encoding: "%aa" -> "%AA", each non-ASCII octet ->
    "%XX" (so "á" -> "%C3%A1"). Escapes are never decoded: "%62" stays "%62", not "b"."""
    raw = value.encode("utf-8") if isinstance(value, str) else value
    if b"%" in raw:
        raw = _HEX_ESCAPE_BYTES.sub(lambda m: m.group().upper(), raw)
    text = raw.decode("latin-1")  # one char per octet, so octets >= 0x80 can be escaped
    if text.isascii():
        return text
    return _HIGH_BYTE.sub(lambda m: f"%{ord(m.group()):02X}", text)


def _lines(body: bytes) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of the first ROBOTS_MAX_BYTES, split at LF, CR or CRLF, each cut at
    MAX_LINE_BYTES, after skipping a UTF-8 byte order mark (or a truncated one, as Google does)."""
    body = body[:ROBOTS_MAX_BYTES]
    for size in (3, 2, 1):
        if body.startswith(_BOM[:size]):
            body = body[size:]
            break
    # bytes.splitlines() splits at exactly \n, \r and \r\n (str.splitlines would split more).
    for number, line in enumerate(body.splitlines(), 1):
        yield number, line[:MAX_LINE_BYTES]


def _key_value(line: bytes) -> tuple[bytes, bytes] | None:
    line = line.split(b"#", 1)[0].strip(_ASCII_SPACE)
    key, colon, value = line.partition(b":")
    if not colon:
        # A forgotten colon is forgiven when the line is exactly "key value".
        parts = _BLANKS.split(line)
        if len(parts) != 2:
            return None
        key, value = parts
    key = key.strip(_ASCII_SPACE)
    return (key, value.strip(_ASCII_SPACE)) if key else None


def _canonical_key(raw_key: bytes) -> str:
    lowered = raw_key.lower()  # bytes.lower() touches ASCII letters only
    for key, spellings in _KEY_PREFIXES:
        if lowered.startswith(spellings):
            return key
    return _EXTENSION_KEYS.get(lowered) or lowered.decode("utf-8", "replace")


def parse_records(body: bytes) -> list[RobotsRecord]:
    """Every "key: value" line of a robots.txt body, in order, comments and blank lines dropped."""
    records = []
    for number, line in _lines(body):
        pair = _key_value(line)
        if pair is None:
            continue
        raw_key, raw_value = pair
        key = _canonical_key(raw_key)
        if key in (ALLOW, DISALLOW):
            # Escaped from the raw octets, so a Latin-1 file's "\xe9" still meets "%E9" in URLs.
            value = escape_pattern(raw_value)
        else:
            value = raw_value.decode("utf-8", "replace")
        records.append(RobotsRecord(number, key, value))
    return records


# ---- rules and matching --------------------------------------------------------------------

class Rule(NamedTuple):
    """One Allow/Disallow pattern, split at each `*`; a trailing `$` anchors it at the end."""
    allow: bool
    pattern: str
    pieces: tuple[str, ...]
    anchored: bool

    @classmethod
    def of(cls, allow: bool, pattern: str) -> Rule:
        anchored = pattern.endswith("$")  # "$" anywhere else is an ordinary character
        literal = pattern[:-1] if anchored else pattern
        return cls(allow, pattern, tuple(literal.split("*")), anchored)

    @property
    def priority(self) -> int:
        """Longest match wins: a rule weighs the length of its pattern as written."""
        return len(self.pattern)

    def matches(self, path: str) -> bool:
        # Greedy leftmost search is exact for `*`-only globs, and linear in practice,
        # so a hostile pattern cannot make matching blow up.
        first, *rest = self.pieces
        if not path.startswith(first):
            return False
        if not rest:
            return not self.anchored or len(path) == len(first)
        pos = len(first)
        for piece in rest[:-1]:
            found = path.find(piece, pos)
            if found < 0:
                return False
            pos = found + len(piece)
        last = rest[-1]
        if self.anchored:
            return path.endswith(last) and len(path) - len(last) >= pos
        return path.find(last, pos) >= 0


def _rules_for(allow: bool, pattern: str) -> list[Rule]:
    rules = [Rule.of(allow, pattern)]
    # Google: allowing ".../index.htm(l)" allows the directory URL ".../" too.
    slash = pattern.rfind("/")
    if allow and slash >= 0 and pattern.startswith("/index.htm", slash):
        rules.append(Rule.of(True, pattern[:slash + 1] + "$"))
    return rules


def _ranked(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    # Longest pattern first, Allow before Disallow on ties: the first rule that matches decides.
    unique = dict.fromkeys(rules)  # a file repeating a line thousands of times costs once
    return tuple(sorted(unique, key=lambda r: (-r.priority, not r.allow)))


def path_params_query(url: str) -> str:
    """The part of a URL rules match against: path, params and query, no fragment, always
    starting with "/" (Google's GetPathParamsQuery). Accepts absolute URLs and bare paths."""
    start = 2 if url.startswith("//") else 0
    early_path = _PATH_START.search(url, start)
    scheme_end = url.find("://", start)
    if scheme_end < 0 or (early_path and early_path.start() < scheme_end):
        authority = start  # "://" inside a path or query is no scheme separator
    else:
        authority = scheme_end + 3
    path_start = _PATH_START.search(url, authority)
    if path_start is None:
        return "/"
    begin = path_start.start()
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < begin:
        return "/"
    path = url[begin:hash_pos] if hash_pos >= 0 else url[begin:]
    return path if path.startswith("/") else "/" + path


def _normalised_path(url: str) -> str:
    path = path_params_query(url)
    # Patterns get their escapes upper-cased; do the same here so "%aa" meets "%AA". Nothing is
    # decoded or newly encoded: URLs reach us already percent-encoded by the URL normaliser.
    if "%" in path:
        path = _HEX_ESCAPE.sub(lambda m: m.group().upper(), path)
    return path


# ---- extension directives ------------------------------------------------------------------

class RequestRate(NamedTuple):
    requests: int
    seconds: int
    start_time: TimeOfDay | None = None
    end_time: TimeOfDay | None = None


class VisitTime(NamedTuple):
    start_time: TimeOfDay
    end_time: TimeOfDay


_DELAY = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_RATE = re.compile(r"(\d+)\s*/\s*(\d+)\s*([smhd]?)(?:\s+(\d{3,4})\s*-\s*(\d{3,4}))?", re.I)
_PERIOD = re.compile(r"(\d{3,4})\s*[-\s]\s*(\d{3,4})")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _time_of_day(hhmm: str) -> TimeOfDay:
    return TimeOfDay(int(hhmm[:-2]), int(hhmm[-2:]))  # ValueError past 23:59


def _parse_delay(value: str) -> float | None:
    return float(value) if _DELAY.fullmatch(value) else None


def _parse_request_rate(value: str) -> RequestRate | None:
    """"1/10s", "100/15m", "9000/1d", "1/5" (seconds), optionally with a window "1/10s 1820-1940"."""
    m = _RATE.fullmatch(value)
    if not m:
        return None
    requests, seconds = int(m[1]), int(m[2]) * _UNIT_SECONDS[m[3].lower()]
    if requests <= 0 or seconds <= 0:
        return None
    try:
        window = (_time_of_day(m[4]), _time_of_day(m[5])) if m[4] else (None, None)
    except ValueError:
        return None
    return RequestRate(requests, seconds, *window)


def _parse_visit_time(value: str) -> VisitTime | None:
    """"0200-0630" or "0200 0630"."""
    m = _PERIOD.fullmatch(value)
    try:
        return VisitTime(_time_of_day(m[1]), _time_of_day(m[2])) if m else None
    except ValueError:
        return None


# ---- groups ---------------------------------------------------------------------------------

class _Group:
    """What the groups of one kind (ours, or `*`) say, merged; the first valid extension value wins."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.crawl_delay: float | None = None
        self.request_rate: RequestRate | None = None
        self.visit_time: VisitTime | None = None

    def add(self, record: RobotsRecord) -> None:
        if record.key in (ALLOW, DISALLOW):
            self.rules += _rules_for(record.key == ALLOW, record.value)
        elif record.key == CRAWL_DELAY and self.crawl_delay is None:
            self.crawl_delay = _parse_delay(record.value)
        elif record.key == REQUEST_RATE and self.request_rate is None:
            self.request_rate = _parse_request_rate(record.value)
        elif record.key == VISIT_TIME and self.visit_time is None:
            self.visit_time = _parse_visit_time(record.value)


def _select_group(records: Iterable[RobotsRecord], token: str) -> tuple[str, _Group]:
    """Read the groups as Google does and return ("specific" | "global" | "none", merged group).

    Consecutive user-agent lines share one group; a user-agent line after a member line opens
    a new one. Member lines outside any group naming us or `*` are ignored (so are those before
    the first user-agent line). A group naming both us and `*` counts as ours. The `*` groups
    apply only when no group names us, even an empty one.
    """
    ours, everyone = _Group(), _Group()
    names_us = names_everyone = member_seen = False
    ever_named_us = ever_named_everyone = False
    token = token.lower()
    for record in records:
        if record.key == USER_AGENT:
            if member_seen:
                names_us = names_everyone = member_seen = False
            if _names_everyone(record.value):
                names_everyone = ever_named_everyone = True
            elif token and _AGENT_NAME.match(record.value).group().lower() == token:
                names_us = ever_named_us = True
        elif record.key in _GROUP_MEMBER_KEYS and (names_us or names_everyone):
            member_seen = True
            (ours if names_us else everyone).add(record)
    if ever_named_us:
        return "specific", ours
    return ("global" if ever_named_everyone else "none"), everyone


def _sitemaps(records: Iterable[RobotsRecord]) -> tuple[str, ...]:
    urls = (r.value for r in records if r.key == SITEMAP)
    # Sitemap URLs must be absolute (sitemaps.org); relative ones have no defined base here.
    return tuple(dict.fromkeys(u for u in urls if u.lower().startswith(("http://", "https://"))))


# ---- policy ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class RobotsPolicy:
    """What one host's robots.txt says for our user agent."""

    source: str  # PARSED, ALLOW_ALL_4XX, DISALLOW_ALL_5XX, ... (for the fetch log)
    rules: tuple[Rule, ...] = ()  # our group's rules, in the order they are tried
    group: str = "none"  # which group applied: "specific" (ours), "global" (`*`) or "none"
    crawl_delay: float | None = None  # Crawl-delay, else seconds/requests of Request-rate
    request_rate: RequestRate | None = None
    visit_time: VisitTime | None = None
    sitemaps: tuple[str, ...] = ()  # from the whole file, whatever the group
    preferred_host: str | None = None  # the first Host line (a Yandex extension)

    def allowed(self, url: str) -> bool:
        """May we fetch url (absolute, or a path with optional query)? /robots.txt always may."""
        path = _normalised_path(url)
        if path == "/robots.txt":
            return True
        for rule in self.rules:
            if rule.matches(path):
                # An empty pattern matches everything but weighs nothing: "Disallow:" allows all.
                return rule.allow or rule.priority == 0
        return True

    @property
    def transient(self) -> bool:
        """True when the policy only says robots.txt could not be read now (5xx, unreachable)."""
        return self.source in TRANSIENT_SOURCES


def parse_robots(body: bytes, user_agent: str) -> RobotsPolicy:
    """The policy a robots.txt body sets for user_agent (matched by its product_token).

    Only the first ROBOTS_MAX_BYTES are read; bytes are decoded as UTF-8 with replacement,
    except rule patterns, which are percent-escaped octet by octet (see escape_pattern).
    """
    records = parse_records(body)
    group_kind, group = _select_group(records, product_token(user_agent))
    crawl_delay = group.crawl_delay
    if crawl_delay is None and group.request_rate is not None:
        crawl_delay = group.request_rate.seconds / group.request_rate.requests
    return RobotsPolicy(
        source=PARSED,
        rules=_ranked(group.rules),
        group=group_kind,
        crawl_delay=crawl_delay,
        request_rate=group.request_rate,
        visit_time=group.visit_time,
        sitemaps=_sitemaps(records),
        preferred_host=next((r.value for r in records if r.key == HOST and r.value), None),
    )


def allow_all(source: str) -> RobotsPolicy:
    return RobotsPolicy(source=source)


def disallow_all(source: str) -> RobotsPolicy:
    return RobotsPolicy(source=source, rules=(Rule.of(False, "/"),))


@dataclass(frozen=True)
class RobotsResponse:
    status: int | None  # None: unreachable (DNS error, connection refused, timeout, too many redirects)
    body: bytes = b""


def policy_from_response(resp: RobotsResponse, user_agent: str) -> RobotsPolicy:
    """RFC 9309 §2.3.1: 2xx is parsed; 4xx means "unavailable", crawl freely; 5xx and no answer
    mean "unreachable", crawl nothing. 429 is treated as unreachable (Google does too): the
    site asks us to slow down, not to ignore its rules. A 3xx here is a redirect chain the
    fetcher gave up on, which the RFC lets us treat as unavailable."""
    status = resp.status
    if status is None:
        return disallow_all(DISALLOW_ALL_UNREACHABLE)
    if 200 <= status < 300:
        return parse_robots(resp.body, user_agent)
    if 300 <= status < 400:
        return allow_all(ALLOW_ALL_3XX)
    if status == 429:
        return disallow_all(DISALLOW_ALL_429)
    if 400 <= status < 500:
        return allow_all(ALLOW_ALL_4XX)
    if 500 <= status < 600:
        return disallow_all(DISALLOW_ALL_5XX)
    return disallow_all(DISALLOW_ALL_UNREACHABLE)  # 1xx or nonsense: no usable answer


def robots_ttl(policy: RobotsPolicy, ttl_s: float, error_ttl_s: float) -> float:
    """How long a policy is kept before robots.txt is asked again: error_ttl_s for a transient
    one (robots.txt could not be read now), so the host is asked again soon; else ttl_s."""
    return error_ttl_s if policy.transient else ttl_s
