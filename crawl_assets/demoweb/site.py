"""The pure, deterministic model of the synthetic demo web: which hosts and pages exist,
what every page says and links to on a given day, and the HTTP response for a request.

No I/O happens here, so tests can compute the expected web (link graph, robots rules,
change days) without a server, and the asyncio server in server.py stays a thin shell.
Everything is derived lazily from (seed, host index, page kind/index, version day) through
`random.Random(stable_int(...))`, so 2,000+ hosts cost nothing until a page is requested,
and two processes with the same parameters serve byte-identical pages.

Shape of the web (per host `hNNNN.<domain>`, all reachable on one port):
  /                 home page: links to the top pages, some random pages, other hosts
  /p/{n}.html       n in 0..pages_per_host-1; Zipf-skewed same-host links, ~5-10 %
                    cross-host links, "next" and two "child" links (2n+1, 2n+2) so every
                    page is reachable from the home page within ~log2(pages) hops
  /private/{k}.html only on hosts whose robots.txt disallows /private/; linked from pages
  /robots.txt       one of eight variants picked by host index (see ROBOTS_VARIANTS)
  /sitemap.xml      every home and /p/ page with its <lastmod>

The link graph does not depend on the day; page text does: each page has a change period
(daily, ~weekly, ~monthly or never) and a phase, and on day d shows the version of the last
day <= d on which it changed (`page_version_day`). A new version rewrites about a quarter
of the paragraphs, so successive versions are near-duplicates, like real edits.

Special hosts (hostile endpoints, crawler traps) are added through
`DemoWeb.register_host(hostname, handler)`: the handler gets the request and returns a
Response; regular generated hosts are untouched by it. `DemoWeb(..., hostile=True)` adds the
hostile hosts of hostile_hosts.py (slow drip, never answering, gzip bomb, redirect loop, ...) and
`web.hostile_hosts()` describes them. Their streaming responses use Response.stream,
bytes_per_s and hang, which only the server interprets. `DemoWeb(..., traps=True)` adds the
crawler-trap hosts of trap_hosts.py (endless calendar, session ids, faceted navigation, ever-deeper
paths, random links), described by `web.trap_hosts()`. `DemoWeb(..., near_duplicates=True)`
adds the labelled near-duplicate article hosts of neardup_hosts.py, described by
`web.near_duplicate_groups()` and `web.near_duplicate_homes()`; all flags may be combined.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime, parsedate_to_datetime
from random import Random
from typing import TYPE_CHECKING, Callable, Iterable, Mapping
from urllib.parse import unquote

from .words import NAME_WORDS, WORDS

if TYPE_CHECKING:
    from .hostile_hosts import HostileHost
    from .neardup_hosts import NearDupGroup
    from .trap_hosts import TrapHost

# Last-Modified of every page is EPOCH + the day its current version appeared.
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
HOME_PAGE = -1  # page index meaning "/" wherever a page index is taken
PRIVATE_PAGES = 5  # /private/0.html .. /private/4.html on hosts that disallow /private/
ZIPF_EXPONENT = 1.1
HTML_TYPE = "text/html; charset=utf-8"


@dataclass
class Response:
    """One HTTP response. Treat as immutable: cached instances are shared between requests.

    Hostile endpoints use three more fields, interpreted by the server:
      stream       body chunks produced lazily instead of `body` (a fresh iterator per
                   response). Without a Content-Length header it is sent chunked (HTTP/1.1)
                   or close-delimited (HTTP/1.0); it may never end.
      bytes_per_s  send the body (or stream) no faster than this (a slow drip).
      hang         read the request and never answer, until the client closes.
    A response with any of them is written with backpressure, closes the connection after,
    and stop() cancels it instead of waiting for it.
    """

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    stream: Iterable[bytes] | None = None
    bytes_per_s: float | None = None
    hang: bool = False

    @property
    def streaming(self) -> bool:
        return self.hang or self.stream is not None or self.bytes_per_s is not None

    def header(self, name: str) -> str | None:
        """First value of a header, matched case-insensitively (handy in tests)."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


# A special host: (web, path with query, lowercase request headers) -> Response.
HostHandler = Callable[["DemoWeb", str, Mapping[str, str]], Response]


def stable_int(*parts: object) -> int:
    """A 64-bit integer from the parts' reprs; unlike hash() it is the same in every process."""
    data = "\x1f".join(repr(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def http_date(moment: datetime) -> str:
    """RFC 7231 IMF-fixdate, e.g. 'Thu, 01 Jan 2026 00:00:00 GMT'."""
    return format_datetime(moment, usegmt=True)


def day_datetime(day: int) -> datetime:
    return EPOCH + timedelta(days=day)


def error_response(status: int, message: str, extra_headers: list[tuple[str, str]] | None = None) -> Response:
    """A small HTML error page; the server uses it too (400, 405, ...)."""
    body = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{status} {message}</title>\n</head>\n<body>\n<h1>{message}</h1>\n"
        "<p>The demo web could not serve this request.</p>\n</body>\n</html>\n"
    ).encode("utf-8")
    headers = [("Content-Type", HTML_TYPE), ("Content-Length", str(len(body)))]
    return Response(status, headers + list(extra_headers or ()), body)


# robots.txt variants, chosen by host_index % len(ROBOTS_VARIANTS). None = no robots.txt (404).
# Keys: disallow_private, crawl_delay, sitemap.
ROBOTS_VARIANTS: tuple[dict | None, ...] = (
    {"disallow_private": False, "crawl_delay": None, "sitemap": False},  # allow all
    {"disallow_private": True, "crawl_delay": None, "sitemap": False},
    {"disallow_private": False, "crawl_delay": 0.1, "sitemap": False},
    {"disallow_private": False, "crawl_delay": None, "sitemap": True},
    {"disallow_private": True, "crawl_delay": None, "sitemap": True},
    None,  # robots.txt missing: crawlers must treat as allow-all
    {"disallow_private": False, "crawl_delay": 0.25, "sitemap": True},
    {"disallow_private": True, "crawl_delay": 0.1, "sitemap": True},
)


@dataclass(frozen=True)
class _Link:
    url: str  # absolute, no fragment: what outlinks() reports
    href: str  # as written in the HTML (relative, absolute, protocol-relative, #fragment)
    text: str


@dataclass(frozen=True)
class _LinkPlan:
    """Where a page's links go in its HTML. Depends only on (seed, host, page), not the day."""

    nav: tuple[_Link, ...]
    inline: tuple[_Link, ...]
    related: tuple[_Link, ...]
    footer: tuple[_Link, ...]

    def all(self) -> tuple[_Link, ...]:
        return self.nav + self.inline + self.related + self.footer


@dataclass(frozen=True)
class _Resource:
    """A rendered 200 response plus what conditional requests compare against."""

    response: Response
    etag: str
    last_modified: datetime


class _Zipf:
    """Samples 0..n-1 with P(i) proportional to 1/(i+1)^s: low indices are very popular."""

    def __init__(self, n: int, exponent: float = ZIPF_EXPONENT):
        self.population = range(n)
        total = 0.0
        cum = []
        for i in range(n):
            total += 1.0 / (i + 1) ** exponent
            cum.append(total)
        self.cum_weights = cum

    def sample(self, rng: Random, k: int) -> list[int]:
        return rng.choices(self.population, cum_weights=self.cum_weights, k=k)

    def distinct(self, rng: Random, want: int, exclude: set[int]) -> list[int]:
        """Up to `want` distinct indices not in `exclude`, in draw order."""
        n = len(self.population)
        want = min(want, n - sum(1 for e in exclude if 0 <= e < n))
        chosen: list[int] = []
        seen = set(exclude)
        for _ in range(8):  # bounded: the heavy head makes later draws mostly repeats
            if len(chosen) >= want:
                break
            for idx in self.sample(rng, want * 3):
                if idx not in seen:
                    seen.add(idx)
                    chosen.append(idx)
                    if len(chosen) >= want:
                        break
        return chosen


@functools.lru_cache(maxsize=8)
def _zipf(n: int) -> _Zipf:
    return _Zipf(n)


@functools.lru_cache(maxsize=8)
def _sentence_pool(seed: int, size: int = 4096) -> tuple[tuple[str, ...], int]:
    """Pseudo-English sentences shared by all pages of a seed (pages pick from it cheaply),
    and their mean length plus one for the joining space."""
    rng = Random(stable_int(seed, "sentences"))
    pool = []
    for _ in range(size):
        words = rng.choices(WORDS, k=rng.randint(6, 18))
        if rng.random() < 0.3:
            cut = rng.randint(2, len(words) - 2)
            words[cut] = words[cut] + ","
        end = "?" if rng.random() < 0.05 else "."
        text = " ".join(words)
        pool.append(text[0].upper() + text[1:] + end)  # not capitalize(): keeps 'Zürich'
    return tuple(pool), round(sum(map(len, pool)) / size) + 1


_HOST_LABEL = re.compile(r"h(\d{4,})")
_P_PATH = re.compile(r"/p/(0|[1-9][0-9]*)\.html")
_PRIVATE_PATH = re.compile(r"/private/(0|[1-9][0-9]*)\.html")


def register_special_hosts(web, labels: Mapping[str, str], make_handler) -> dict[str, str]:
    """Register one host `<label>.<domain>` per kind on `web` (in place), served by
    make_handler(kind, hostname); returns hostname -> kind. Hostile, trap and near-duplicate
    hosts all come in this way."""
    added = {}
    for kind, label in labels.items():
        hostname = f"{label}.{web.domain}"
        web.register_host(hostname, make_handler(kind, hostname))
        added[hostname] = kind
    return added


def normalize_host(host: str) -> str:
    """Lowercase, drop ':port' (IPv6 literals keep their brackets) and a trailing dot."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[: end + 1] if end != -1 else host
    host = host.split(":", 1)[0]
    return host.rstrip(".")


_COMMON_WORDS = WORDS[:200]  # ASCII-only head of the list, for titles and anchors


def _between(rng: Random, low: int, high: int) -> int:
    """rng.randint(low, high) at a fraction of the cost; rendering calls it a lot."""
    return low + int(rng.random() * (high - low + 1))


def _title_words(rng: Random, low: int, high: int) -> str:
    return " ".join(w.capitalize() for w in rng.choices(_COMMON_WORDS, k=_between(rng, low, high)))


def _phrase_pool(size: int, low: int, high: int, title_case: bool) -> tuple[str, ...]:
    rng = Random(stable_int("phrases", low, high, title_case))
    words = [w.capitalize() if title_case else w for w in _COMMON_WORDS]
    return tuple(" ".join(rng.choices(words, k=_between(rng, low, high))) for _ in range(size))


# Anchor texts and headings come from fixed pools: picking one is a single rng call,
# and there are ~30 links and ~15 headings per page.
_ANCHOR_TEXTS = _phrase_pool(1024, 1, 4, title_case=False)
_HEADINGS = _phrase_pool(1024, 2, 5, title_case=True)


def _pick(rng: Random, pool: tuple[str, ...]) -> str:
    return pool[int(rng.random() * len(pool))]


class DemoWeb:
    """The synthetic web. Parameters are fixed at construction; use with_port()/with_day()
    to get a sibling that shares nothing mutable (each instance has its own page cache)."""

    def __init__(
        self,
        seed: int = 1,
        hosts: int = 50,
        pages_per_host: int = 300,
        day: int = 0,
        port: int = 8471,
        domain: str = "demo.test",
        *,
        hostile: bool = False,
        traps: bool = False,
        near_duplicates: bool = False,
        cache_pages: int = 1024,
    ):
        """hostile=True adds the hostile hosts (see hostile_hosts.py and hostile_hosts()),
        traps=True the crawler-trap hosts (see trap_hosts.py and trap_hosts()), near_duplicates=True
        the labelled near-duplicate hosts (see neardup_hosts.py and near_duplicate_groups())."""
        if hosts < 1 or pages_per_host < 1:
            raise ValueError("hosts and pages_per_host must be at least 1")
        if day < 0:
            raise ValueError("day must be >= 0")
        if not 0 <= port <= 65535:
            raise ValueError(f"bad port {port}")
        self._seed = int(seed)
        self._hosts = int(hosts)
        self._pages = int(pages_per_host)
        self._day = int(day)
        self._port = int(port)
        self._domain = domain.lower().strip(".")
        self._cache_pages = cache_pages
        self._special: dict[str, HostHandler] = {}
        self._host_suffix = "." + self._domain
        # functools.lru_cache is thread-safe, so tests may call respond() while a server
        # thread serves the same instance.
        self._resource = functools.lru_cache(maxsize=cache_pages)(self._build_resource)
        self._link_plan = functools.lru_cache(maxsize=cache_pages * 2)(self._build_link_plan)
        if hostile:
            from .hostile_hosts import add_hostile_hosts

            add_hostile_hosts(self)
        if traps:
            from .trap_hosts import add_trap_hosts

            add_trap_hosts(self)
        if near_duplicates:
            from .neardup_hosts import add_near_duplicate_hosts

            add_near_duplicate_hosts(self)

    # ---- parameters -------------------------------------------------------------------

    seed = property(lambda self: self._seed)
    hosts = property(lambda self: self._hosts)
    pages_per_host = property(lambda self: self._pages)
    day = property(lambda self: self._day)
    port = property(lambda self: self._port)
    domain = property(lambda self: self._domain)

    def _replace(self, **changes) -> "DemoWeb":
        params = dict(seed=self._seed, hosts=self._hosts, pages_per_host=self._pages,
                      day=self._day, port=self._port, domain=self._domain)
        params.update(changes)
        web = DemoWeb(**params, cache_pages=self._cache_pages)
        web._special = dict(self._special)
        return web

    def with_port(self, port: int) -> "DemoWeb":
        """Same web, URLs pointing at `port` (the server calls this once it has bound)."""
        return self if port == self._port else self._replace(port=port)

    def with_day(self, day: int) -> "DemoWeb":
        """Same web as seen on another day."""
        return self if day == self._day else self._replace(day=day)

    def __repr__(self) -> str:
        return (f"DemoWeb(seed={self._seed}, hosts={self._hosts}, pages_per_host={self._pages}, "
                f"day={self._day}, port={self._port}, domain={self._domain!r})")

    # ---- hosts and URLs ---------------------------------------------------------------

    def hostname(self, host_index: int) -> str:
        return f"h{host_index:04d}.{self._domain}"

    def hostnames(self) -> list[str]:
        return [self.hostname(i) for i in range(self._hosts)]

    def host_index(self, host: str) -> int | None:
        """Index of a generated host ('H0042.demo.test:8471' -> 42), None if not one of ours."""
        host = normalize_host(host)
        if not host.endswith(self._host_suffix):
            return None
        match = _HOST_LABEL.fullmatch(host[: -len(self._host_suffix)])
        if not match:
            return None
        index = int(match.group(1))
        if index >= self._hosts or f"{index:04d}" != match.group(1):
            return None  # h42 or h00042 are not the canonical names
        return index

    def base_url(self, host_index: int) -> str:
        return f"http://{self.hostname(host_index)}:{self._port}"

    def page_path(self, page_index: int) -> str:
        return "/" if page_index == HOME_PAGE else f"/p/{page_index}.html"

    def page_url(self, host_index: int, page_index: int) -> str:
        return self.base_url(host_index) + self.page_path(page_index)

    def page_urls(self, host_index: int) -> list[str]:
        """Home page and every /p/ page of a host (what the sitemap lists; no private pages)."""
        base = self.base_url(host_index)
        return [base + "/"] + [f"{base}/p/{n}.html" for n in range(self._pages)]

    def private_urls(self, host_index: int) -> list[str]:
        """The robots-disallowed pages of a host (empty unless it disallows /private/)."""
        if not self.robots_rules(host_index)["disallow"]:
            return []
        base = self.base_url(host_index)
        return [f"{base}/private/{k}.html" for k in range(PRIVATE_PAGES)]

    def seed_urls(self, per_host: int = 1) -> list[str]:
        """Per host: the home page, then /p/0.html, /p/1.html ... up to per_host URLs."""
        urls = []
        for h in range(self._hosts):
            urls.append(self.base_url(h) + "/")
            urls.extend(self.page_url(h, n) for n in range(min(per_host - 1, self._pages)))
        return urls

    # ---- special hosts ----------------------------------------------------------------

    def register_host(self, hostname: str, handler: HostHandler) -> None:
        """Serve `hostname` with `handler` instead of the generated model (for later use:
        hostile endpoints, traps). Carried over by with_port()/with_day()."""
        self._special[normalize_host(hostname)] = handler

    def special_hostnames(self) -> list[str]:
        return sorted(self._special)

    def hostile_hosts(self) -> list["HostileHost"]:
        """Machine-readable description of the registered hostile hosts (URLs carry this
        web's port), in hostile.KINDS order; [] unless hostile=True / add_hostile_hosts()."""
        from .hostile_hosts import KINDS, HostileHandler

        handlers = [h for h in self._special.values() if isinstance(h, HostileHandler)]
        order = list(KINDS)
        handlers.sort(key=lambda h: (order.index(h.kind), h.hostname))
        return [h.describe(self) for h in handlers]

    def trap_hosts(self) -> list["TrapHost"]:
        """Machine-readable description of the registered crawler-trap hosts (URLs carry this
        web's port), in traps.TRAP_KINDS order; [] unless traps=True / add_trap_hosts()."""
        from .trap_hosts import TRAP_KINDS, TrapHandler

        handlers = [h for h in self._special.values() if isinstance(h, TrapHandler)]
        handlers.sort(key=lambda h: (TRAP_KINDS.index(h.kind), h.hostname))
        return [h.describe(self) for h in handlers]

    def _near_dup_corpus(self):
        from .neardup_hosts import NearDupHandler

        for handler in self._special.values():
            if isinstance(handler, NearDupHandler):
                return handler.corpus
        return None

    def near_duplicate_groups(self) -> list["NearDupGroup"]:
        """Labelled groups of the near-duplicate hosts (URLs carry this web's port), in
        neardup.GROUPS order; [] unless near_duplicates=True / add_near_duplicate_hosts()."""
        corpus = self._near_dup_corpus()
        return corpus.groups(self) if corpus is not None else []

    def near_duplicate_homes(self) -> list[str]:
        """Home page URLs of the near-duplicate hosts (every labelled URL is linked from one)."""
        corpus = self._near_dup_corpus()
        return corpus.homes(self) if corpus is not None else []

    def with_fresh_state(self) -> "DemoWeb":
        """A sibling whose stateful special hosts (429 once, flapping 503, session-id view
        counters) start from zero; the server calls it when it starts. Handlers with a fresh() method are
        replaced by fresh() copies; with_port()/with_day() share state instead."""
        if not any(hasattr(h, "fresh") for h in self._special.values()):
            return self
        web = self._replace()
        web._special = {name: (h.fresh() if hasattr(h, "fresh") else h)
                        for name, h in self._special.items()}
        return web

    # ---- robots.txt -------------------------------------------------------------------

    def robots_rules(self, host_index: int) -> dict:
        """What the host's robots.txt says for User-agent *: disallow (path prefixes),
        crawl_delay (seconds or None), sitemaps (URLs), present (False: robots.txt is 404)."""
        variant = ROBOTS_VARIANTS[host_index % len(ROBOTS_VARIANTS)]
        if variant is None:
            return {"disallow": [], "crawl_delay": None, "sitemaps": [], "present": False}
        return {
            "disallow": ["/private/"] if variant["disallow_private"] else [],
            "crawl_delay": variant["crawl_delay"],
            "sitemaps": [self.base_url(host_index) + "/sitemap.xml"] if variant["sitemap"] else [],
            "present": True,
        }

    def robots_txt(self, host_index: int) -> str | None:
        rules = self.robots_rules(host_index)
        if not rules["present"]:
            return None
        lines = [f"# robots.txt for {self.hostname(host_index)}", "User-agent: *"]
        lines += [f"Disallow: {p}" for p in rules["disallow"]] or ["Disallow:"]
        if rules["crawl_delay"] is not None:
            lines.append(f"Crawl-delay: {rules['crawl_delay']}")
        if rules["sitemaps"]:
            lines.append("")
            lines += [f"Sitemap: {url}" for url in rules["sitemaps"]]
        return "\n".join(lines) + "\n"

    # ---- change model -----------------------------------------------------------------

    def page_version_day(self, host_index: int, page_index: int | str, day: int | None = None) -> int:
        """The last day <= `day` (default: this web's day) on which the page changed; 0 if it
        never did. page_index is an int (HOME_PAGE = -1 for '/') or a path."""
        day = self._day if day is None else day
        kind, n = self._page_key(page_index)
        if day <= 0 or kind == "private":
            return 0
        if kind == "home":
            return day  # home pages change daily
        rng = Random(stable_int(self._seed, "rate", host_index, n))
        u = rng.random()
        if u < 0.05:
            period = 1
        elif u < 0.20:
            period = rng.randint(5, 9)  # ~weekly
        elif u < 0.45:
            period = rng.randint(20, 40)  # ~monthly
        else:
            return 0  # most pages never change
        phase = rng.randrange(period)
        # Change days are the d >= 1 with (d + phase) % period == 0.
        last = day - (day + phase) % period
        return last if last >= 1 else 0

    def last_modified(self, host_index: int, page_index: int | str) -> datetime:
        return day_datetime(self.page_version_day(host_index, page_index))

    # ---- link graph -------------------------------------------------------------------

    def outlinks(self, host_index: int, page: int | str) -> list[str]:
        """Absolute URLs (no fragment) the page links to, deduplicated, in document order.
        `page` is a page index (HOME_PAGE for '/') or a path like '/p/7.html'."""
        kind, n = self._page_key(page)
        seen: dict[str, None] = {}
        for link in self._link_plan(host_index, kind, n).all():
            seen.setdefault(link.url, None)
        return list(seen)

    def _page_key(self, page: int | str) -> tuple[str, int]:
        if isinstance(page, int):
            if page == HOME_PAGE:
                return ("home", 0)
            if not 0 <= page < self._pages:
                raise ValueError(f"page index {page} out of range 0..{self._pages - 1}")
            return ("p", page)
        key = self._route(page)
        if key is None or key[0] not in ("home", "p", "private"):
            raise ValueError(f"not a page path: {page!r}")
        return key

    def _route(self, path: str) -> tuple[str, int] | None:
        path = unquote(path.split("?", 1)[0].split("#", 1)[0])
        if path == "/":
            return ("home", 0)
        if path == "/robots.txt":
            return ("robots", 0)
        if path == "/sitemap.xml":
            return ("sitemap", 0)
        match = _P_PATH.fullmatch(path)
        if match:
            n = int(match.group(1))
            return ("p", n) if n < self._pages else None
        match = _PRIVATE_PATH.fullmatch(path)
        if match:
            n = int(match.group(1))
            return ("private", n) if n < PRIVATE_PAGES else None
        return None

    def _href(self, rng: Random, host_index: int, cur_dir: str, target: str) -> str:
        """One way of writing a same-host link; the mix exercises the crawler's urljoin."""
        r = rng.random()
        if r < 0.40:
            href = target
        elif r < 0.60:
            rest = target[len(cur_dir):] if target.startswith(cur_dir) else None
            if rest is not None and "/" not in rest:
                href = rest or "./"  # '7.html' next to /p/5.html; './' for the dir itself
            elif cur_dir == "/":
                href = target[1:]  # 'p/7.html' from the home page
            else:
                href = "../" + target[1:]
        elif r < 0.70:
            href = "../" + target[1:]  # from '/', excess '..' resolves away (RFC 3986)
        elif r < 0.75 and target.startswith(cur_dir) and "/" not in target[len(cur_dir):]:
            href = "./" + target[len(cur_dir):]
        elif r < 0.95:
            href = self.base_url(host_index) + target
        else:
            href = f"//{self.hostname(host_index)}:{self._port}{target}"
        return self._maybe_fragment(rng, href, target)

    @staticmethod
    def _maybe_fragment(rng: Random, href: str, target: str) -> str:
        if target != "/" and rng.random() < 0.1:
            return f"{href}#section-{_between(rng, 1, 3)}"
        return href

    def _anchor_text(self, rng: Random) -> str:
        return _pick(rng, _ANCHOR_TEXTS)

    def _build_link_plan(self, host_index: int, kind: str, n: int) -> _LinkPlan:
        rng = Random(stable_int(self._seed, "links", host_index, kind, n))
        base = self.base_url(host_index)
        cur_dir = {"home": "/", "p": "/p/", "private": "/private/"}[kind]
        own_path = {"home": "/", "p": f"/p/{n}.html", "private": f"/private/{n}.html"}[kind]
        has_private = bool(self.robots_rules(host_index)["disallow"])
        zipf_pages = _zipf(self._pages)

        def same_host(target: str, text: str | None = None) -> _Link:
            return _Link(base + target, self._href(rng, host_index, cur_dir, target),
                         text or self._anchor_text(rng))

        def cross_host() -> _Link:
            # Other host skewed to low indices (host 0 is the web's "portal"), then page.
            other = host_index
            for idx in _zipf(self._hosts).sample(rng, 8):
                if idx != host_index:
                    other = idx
                    break
            if other == host_index:
                other = (host_index + 1) % self._hosts
            target = "/" if rng.random() < 0.3 else f"/p/{zipf_pages.sample(rng, 1)[0]}.html"
            other_base = self.base_url(other)
            href = other_base + target if rng.random() < 0.85 else f"//{self.hostname(other)}:{self._port}{target}"
            return _Link(other_base + target, self._maybe_fragment(rng, href, target), self._anchor_text(rng))

        nav: list[_Link] = []
        inline: list[_Link] = []
        related: list[_Link] = []
        footer: list[_Link] = []

        if kind != "home":
            nav.append(same_host("/", "Home"))
        # The top pages are in every nav bar: part of why they are so popular.
        for top in range(min(5 if kind != "home" else 10, self._pages)):
            if f"/p/{top}.html" != own_path:
                nav.append(same_host(f"/p/{top}.html"))

        # Zipf-chosen same-host links and ~5-10 % cross-host links.
        total = rng.randint(10, 40) if kind == "p" else rng.randint(12, 20)
        n_cross = round(total * rng.uniform(0.05, 0.10)) if self._hosts > 1 else 0
        if kind == "home" and self._hosts > 1:
            n_cross = max(n_cross, 2)  # a "blogroll" of other sites
        exclude = {n} if kind == "p" else set()
        picks = zipf_pages.distinct(rng, total - n_cross, exclude)
        body_links = [same_host(f"/p/{idx}.html") for idx in picks]
        body_links += [cross_host() for _ in range(n_cross)]
        rng.shuffle(body_links)
        split = len(body_links) // 2
        inline.extend(body_links[:split])
        related.extend(body_links[split:])

        # Structural links so every page is reachable in few hops: next page, two children.
        if kind == "p":
            for child in (n + 1, 2 * n + 1, 2 * n + 2):
                if child < self._pages:
                    related.append(same_host(f"/p/{child}.html"))
        elif kind == "private":
            related.append(same_host(f"/private/{(n + 1) % PRIVATE_PAGES}.html"))

        if has_private and kind == "home":
            footer.append(same_host("/private/0.html", "Members area"))
        elif has_private and kind == "p" and rng.random() < 0.3:
            for k in rng.sample(range(PRIVATE_PAGES), rng.randint(1, 2)):
                inline.insert(rng.randint(0, len(inline)), same_host(f"/private/{k}.html"))
        footer.append(same_host("/sitemap.xml", "Sitemap"))
        return _LinkPlan(tuple(nav), tuple(inline), tuple(related), tuple(footer))

    # ---- rendering --------------------------------------------------------------------

    def _site_name(self, host_index: int) -> str:
        rng = Random(stable_int(self._seed, "site", host_index))
        return " ".join(w.capitalize() for w in rng.sample(NAME_WORDS, 2))

    @staticmethod
    def _paragraph(rng: Random, pool: tuple[str, ...]) -> str:
        return " ".join(rng.choices(pool, k=_between(rng, 3, 8)))

    @staticmethod
    def _paragraphs(rng: Random, pool: tuple[str, ...], mean_chars: int, target_chars: int) -> list[str]:
        """Paragraphs of 3-8 sentences totalling about target_chars; one choices() call
        for all sentences keeps a 30 KB page well under a millisecond."""
        count = target_chars // mean_chars + 1
        sentences = rng.choices(pool, k=count)
        paragraphs = []
        i = 0
        while i < count:
            k = _between(rng, 3, 8)
            paragraphs.append(" ".join(sentences[i:i + k]))
            i += k
        return paragraphs

    @staticmethod
    def _a(link: _Link) -> str:
        return f'<a href="{link.href}">{link.text}</a>'

    def render_page(self, host_index: int, page: int | str, version: int | None = None) -> bytes:
        """The HTML of a page as of `version` (a change day; default: the current one)."""
        kind, n = self._page_key(page)
        if version is None:
            version = self.page_version_day(host_index, HOME_PAGE if kind == "home" else
                                            (n if kind == "p" else f"/private/{n}.html"))
        pool, mean_chars = _sentence_pool(self._seed)
        rng = Random(stable_int(self._seed, "text", host_index, kind, n))
        site = self._site_name(host_index)
        title = "Home" if kind == "home" else _title_words(rng, 2, 6)
        paragraphs = self._paragraphs(rng, pool, mean_chars, _between(rng, 12_000, 40_000))
        headings = [_pick(rng, _HEADINGS) for _ in range(0, len(paragraphs), 4)]
        if version > 0:
            # An edit rewrites about a quarter of the paragraphs; the rest stays.
            edit = Random(stable_int(self._seed, "edit", host_index, kind, n, version))
            for i in edit.sample(range(len(paragraphs)), max(1, len(paragraphs) // 4)):
                paragraphs[i] = self._paragraph(edit, pool)

        plan = self._link_plan(host_index, kind, n)
        # Inline links are spread evenly over the paragraphs, one sentence each.
        inline_at: dict[int, list[_Link]] = {}
        for j, link in enumerate(plan.inline):
            inline_at.setdefault(j * len(paragraphs) // max(1, len(plan.inline)), []).append(link)

        updated = day_datetime(version).date().isoformat()
        out = [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title} | {site}</title>",
            f'<meta name="description" content="{paragraphs[0][:150].rstrip()}">',
            "<style>body{font-family:sans-serif;max-width:48em;margin:auto}nav a{margin-right:1em}</style>",
            "</head>",
            "<body>",
            "<header>",
            f'<p class="site-name">{site}</p>',
            "<nav><ul>",
            *(f"<li>{self._a(link)}</li>" for link in plan.nav),
            "</ul></nav>",
            "</header>",
            '<main id="main">',
            "<article>",
            f"<h1>{title}</h1>",
            f'<p class="meta">Updated <time datetime="{updated}">{updated}</time></p>',
        ]
        for i, para in enumerate(paragraphs):
            if i % 4 == 0:
                section = i // 4 + 1
                out.append(f'<h2 id="section-{section}">{headings[section - 1]}</h2>')
            links = inline_at.get(i)
            if links:
                para += " See " + ", ".join(self._a(link) for link in links) + "."
            out.append(f"<p>{para}</p>")
        out += ["</article>", "<aside>", "<h2>Related</h2>", "<ul>"]
        out += [f"<li>{self._a(link)}</li>" for link in plan.related]
        out += ["</ul>", "</aside>", "</main>", "<footer>",
                f"<p>&copy; 2026 {site}. All rights reserved.</p>", "<p>"]
        out += [self._a(link) for link in plan.footer]
        out += ["</p>", "</footer>", "</body>", "</html>", ""]
        return "\n".join(out).encode("utf-8")

    def render_sitemap(self, host_index: int) -> bytes:
        base = self.base_url(host_index)
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
        for page in [HOME_PAGE, *range(self._pages)]:
            lastmod = day_datetime(self.page_version_day(host_index, page)).date().isoformat()
            out.append(f"<url><loc>{base}{self.page_path(page)}</loc><lastmod>{lastmod}</lastmod></url>")
        out += ["</urlset>", ""]
        return "\n".join(out).encode("utf-8")

    # ---- HTTP -------------------------------------------------------------------------

    def _build_resource(self, host_index: int, kind: str, n: int) -> _Resource | None:
        if kind == "robots":
            text = self.robots_txt(host_index)
            if text is None:
                return None
            body, ctype, version = text.encode("utf-8"), "text/plain; charset=utf-8", 0
        elif kind == "sitemap":
            body, ctype = self.render_sitemap(host_index), "application/xml; charset=utf-8"
            version = self._day  # the home page changes daily, so the sitemap does too
        elif kind == "private" and not self.robots_rules(host_index)["disallow"]:
            return None
        else:
            page = HOME_PAGE if kind == "home" else (n if kind == "p" else f"/private/{n}.html")
            version = self.page_version_day(host_index, page)
            body, ctype = self.render_page(host_index, page, version), HTML_TYPE
        etag = '"' + hashlib.blake2b(body, digest_size=10).hexdigest() + '"'
        modified = day_datetime(version)
        headers = [
            ("Content-Type", ctype),
            ("Content-Length", str(len(body))),
            ("ETag", etag),
            ("Last-Modified", http_date(modified)),
            ("Cache-Control", "max-age=3600"),
        ]
        return _Resource(Response(200, headers, body), etag, modified)

    def respond(self, host: str, path: str, headers: Mapping[str, str] | None = None) -> Response:
        """The response to GET `path` (may carry a query) on `host` (port is ignored).
        `headers` has lowercase keys; If-None-Match / If-Modified-Since give 304s."""
        headers = headers or {}
        host = normalize_host(host)
        special = self._special.get(host)
        if special is not None:
            return special(self, path, headers)
        host_index = self.host_index(host)
        if host_index is None:
            return error_response(404, "Unknown Host")
        key = self._route(path)
        resource = self._resource(host_index, *key) if key is not None else None
        return _answer(resource, headers)


def _etag_matches(header: str, etag: str) -> bool:
    """If-None-Match uses weak comparison: W/"x" matches "x"; '*' matches anything."""
    if header.strip() == "*":
        return True
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == etag:
            return True
    return False


def _answer(resource: _Resource | None, headers: Mapping[str, str]) -> Response:
    """A generated resource as served: 404 if missing, 304 if the client's copy is current."""
    if resource is None:
        return error_response(404, "Not Found")
    if _not_modified(resource, headers):
        return Response(304, [(k, v) for k, v in resource.response.headers
                              if k in ("ETag", "Last-Modified", "Cache-Control")], b"")
    return resource.response


def _not_modified(resource: _Resource, headers: Mapping[str, str]) -> bool:
    inm = headers.get("if-none-match")
    if inm is not None:  # when present, If-Modified-Since is ignored (RFC 7232 §6)
        return _etag_matches(inm, resource.etag)
    ims = headers.get("if-modified-since")
    if ims is None:
        return False
    try:
        since = parsedate_to_datetime(ims)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return since >= resource.last_modified
