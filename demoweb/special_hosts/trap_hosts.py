"""Crawler-trap hosts for the demo web: one infinite (or near-infinite) URL space per host, opt-in.

    web = DemoWeb(hosts=20, traps=True)        # or: add_trap_hosts(DemoWeb(...))
    for t in web.trap_hosts():                 # TrapHost, one per kind, in TRAP_KINDS order
        t.hostname, t.kind, t.home, t.real_pages, t.description, t.config

Every trap host is `<label>.<domain>` and serves an allow-all /robots.txt, a home page `/` and
generated pages: 10-30 KB of pseudo-English HTML like the ordinary pages (sentence pool of
prose.py), with the trap's links plus normal links back to the home page. Unlike the hostile
hosts nothing here is slow or broken: every trap URL answers a quick, valid 200. The
problem is only how many of them there are.

  calendar      calendar.demo.test      /calendar?month=YYYY-MM links to the previous/next month
                                        and year and to each day (&day=D); every month answers
                                        200 (years 1..forever, Gregorian), a bad value shows
                                        the default month 2026-11. real_pages None.
  session_ids   session-ids.demo.test   a 21-page site (/, /p/0.html .. /p/19.html) whose every
                                        link carries a session id (;jsessionid=HEX32, ?sid=hex32
                                        or ?PHPSESSID=base32x26), new on every page view.
                                        Incoming ids, path params and queries are ignored.
                                        real_pages 21.
  facets        facets.demo.test        /shop with 10 filters x 10 values (FACETS); every page
                                        links to the listing with one filter added or changed
                                        (inserted at a varying position) or removed: 11^10
                                        filter states, most of them reachable in many parameter
                                        orders. real_pages 102 (home, /shop, 100 one-filter
                                        pages). Unknown parameters are ignored.
  deep_paths    deep-paths.demo.test    every path answers 200; a page links to 4-6 relative
                                        children './x/' and repeats its last two segments
                                        ('a/b/' on /a/b/ -> /a/b/a/b/), so paths grow forever.
  random_links  random-links.demo.test  every path answers 200 with 25-35 links to random new
                                        URLs of the host (RNG seeded by seed and path+query).

`TrapHost.real_pages` is how many distinct pages a crawler that sees through the trap should
keep (home included), None when the space is unbounded.

Determinism: the same (seed, port, request path) gives the same bytes, with one exception:
session ids. The k-th view (k = 0, 1, ...) of a page of session-ids.demo.test carries the id
blake2b(seed, page, k); one id per view, written in the three formats. The view counter is
per page and per handler (so at most 21 entries), thread-safe, and reset for each server run
(DemoWeb.with_fresh_state(), like hostile's 429/503 counters). A fresh web answering the same
sequence of requests therefore serves the same bytes.

Cheap and bounded: text comes from the shared sentence pool; finished responses are kept in
a per-handler LRU cache (TRAP_CACHE_PAGES entries, keyed by seed, port and path), session
pages as a per-page template where only the id is substituted per view. Nothing grows with
the number of distinct URLs requested.
"""

from __future__ import annotations

import calendar as _calendar
import functools
import hashlib
import html
import threading
from dataclasses import dataclass, field
from datetime import date, timedelta
from random import Random
from typing import Callable, Mapping
from urllib.parse import parse_qsl

from ..host_protocol import HostPlugin, normalize_host, register_hosts
from ..ordinary.change_model import EPOCH
from ..page_shell import anchor as _a
from ..page_shell import html_page, list_item, site_body
from ..prose import COMMON_WORDS, heading, paragraphs, title_words
from ..randomness import between, stable_int
from ..responses import HTML_TYPE, Resource, Response, answer, error_response, make_resource, robots_allow_all

# kind -> hostname label. The order is the order of trap_hosts().
KINDS: dict[str, str] = {
    "calendar": "calendar",
    "session_ids": "session-ids",
    "facets": "facets",
    "deep_paths": "deep-paths",
    "random_links": "random-links",
}
TRAP_KINDS: tuple[str, ...] = tuple(KINDS)

TRAP_CACHE_PAGES = 256  # finished responses kept per trap host

START_MONTH = (2026, 11)  # what /calendar shows without (or with an unusable) ?month=
SESSION_PAGES = 20  # /p/0.html .. /p/19.html on session-ids, plus the home page
SESSION_PARAMS = ("jsessionid", "sid", "PHPSESSID")
RANDOM_LINKS = (25, 35)  # random links per page on random-links (inclusive range)

FACETS: dict[str, tuple[str, ...]] = {
    "color": ("red", "blue", "green", "black", "white", "grey", "yellow", "orange", "purple", "pink"),
    "size": ("xs", "s", "m", "l", "xl", "xxl", "36", "38", "40", "42"),
    "brand": ("acme", "northwind", "globex", "initech", "umbrella", "stark", "wayne", "hooli",
              "vandelay", "wonka"),
    "material": ("cotton", "wool", "linen", "silk", "denim", "leather", "polyester", "nylon",
                 "cashmere", "hemp"),
    "price": ("0-10", "10-25", "25-50", "50-75", "75-100", "100-150", "150-200", "200-300",
              "300-500", "500-plus"),
    "discount": ("5", "10", "15", "20", "25", "30", "40", "50", "60", "70"),
    "fit": ("slim", "regular", "relaxed", "loose", "tapered", "straight", "skinny", "athletic",
            "oversized", "cropped"),
    "season": ("spring", "summer", "autumn", "winter", "all-season", "holiday", "festival",
               "outdoor", "resort", "rain"),
    "pattern": ("plain", "striped", "checked", "floral", "dotted", "camouflage", "paisley",
                "geometric", "animal", "graphic"),
    "sort": ("relevance", "newest", "popular", "price-asc", "price-desc", "rating", "name-asc",
             "name-desc", "discount", "bestseller"),
}
FACET_REAL_PAGES = 2 + sum(len(v) for v in FACETS.values())  # home, /shop, one-filter pages

DEEP_SEGMENTS = ("a", "b", "c", "docs", "archive", "2026", "en", "page", "files", "v2", "misc", "x")

_URL_WORDS = tuple(w for w in COMMON_WORDS if len(w) >= 3)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Not calendar.month_name: that follows the process locale, and the bytes must not.
_MONTHS = ("", "January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass(frozen=True)
class TrapHost:
    """A crawler-trap host.

    home: the home page URL (with this web's port); a crawler seeded with it meets the trap.
    real_pages: distinct real pages on the host (home included) that a crawler seeing through
      the trap would keep; None when the URL space has no such bound (every URL is "real").
    config: kind-specific facts for assertions (parameter names, filters, real URLs, ...).
    """

    hostname: str
    kind: str
    home: str
    real_pages: int | None
    description: str
    config: Mapping[str, object] = field(default_factory=dict)


def trap_hostname(kind: str, domain: str = "demo.test") -> str:
    return f"{KINDS[kind]}.{domain}"


def add_trap_hosts(web) -> dict[str, str]:
    """Register every trap host on `web` (in place); returns hostname -> kind."""
    return register_hosts(web, {kind: KINDS[kind] for kind in TRAP_KINDS}, TrapHandler)


def trap_hosts(web) -> list["TrapHost"]:
    """The trap hosts registered on `web`, described, in TRAP_KINDS order."""
    handlers = [h for h in web.special_handlers().values() if isinstance(h, TrapHandler)]
    handlers.sort(key=lambda h: (TRAP_KINDS.index(h.kind), h.hostname))
    return [h.describe(web) for h in handlers]


PLUGIN = HostPlugin(option="traps", summary_key="traps",
                    help="add the crawler-trap hosts (endless calendar, session ids, facets, ...)",
                    install=add_trap_hosts, homes=lambda web: [t.home for t in trap_hosts(web)])


# ---- page rendering ---------------------------------------------------------------------

_li = list_item


def _render(seed: int, text_key: tuple, *, site: str, title: str, nav: list[tuple[str, str]],
            blocks: list[str], aside_title: str, aside: list[tuple[str, str]],
            head_extra: tuple[str, ...] = (), home_href: str = "/") -> str:
    """A page in the site layout: header + nav, article (trap block, then text), aside with
    links, footer with a link home. The text fills the page to 12-26 KB (at least ~2.5 KB of
    text however many links there are)."""
    rng = Random(stable_int(seed, "trap-text", *text_key))
    target = between(rng, 12_000, 26_000)
    escaped_title = html.escape(title, quote=False)

    def page(text: list[str]) -> str:
        main = ["<article>", f"<h1>{escaped_title}</h1>", *blocks, *text, "</article>"]
        footer = [f"<p>&copy; 2026 {site}. All rights reserved. {_a(home_href, 'Home')}</p>"]
        body = site_body(site, (_a(h, t) for h, t in nav), main, aside_title,
                         ["<ul>", *(_li(h, t) for h, t in aside), "</ul>"], footer)
        return html_page(f"{escaped_title} | {site}", body, head=head_extra)

    skeleton = len(page([])) + 1  # every line of the page but the text, with its newline
    text = []
    for i, para in enumerate(paragraphs(rng, seed, max(2_500, target - skeleton))):
        if i % 4 == 0:
            text.append(f'<h2 id="section-{i // 4 + 1}">{heading(rng)}</h2>')
        text.append(f"<p>{para}</p>")
    return page(text)


def _resource(body: bytes) -> Resource:
    return make_resource(body, HTML_TYPE, EPOCH)


def _href_style(rng: Random, base: str, target: str, query_only: str | None = None) -> str:
    """One way of writing a same-host link to `target` (root-relative path with query):
    root-relative, absolute, or (when given) the query-only relative form '?a=1'."""
    r = rng.random()
    if query_only is not None and r < 0.35:
        return query_only
    if r < 0.85:
        return target
    return base + target


# ---- calendar ---------------------------------------------------------------------------

def _parse_month(value: str | None) -> tuple[int, int] | None:
    if not value or len(value) > 40:
        return None
    year, sep, month = value.partition("-")
    if not sep or not (year.isascii() and year.isdigit() and month.isascii() and month.isdigit()):
        return None
    y, m = int(year), int(month)
    return (y, m) if y >= 1 and 1 <= m <= 12 else None


def _month_str(y: int, m: int) -> str:
    return f"{y:04d}-{m:02d}"


def _add_months(y: int, m: int, delta: int) -> tuple[int, int] | None:
    total = y * 12 + (m - 1) + delta
    y2, m2 = divmod(total, 12)
    return (y2, m2 + 1) if y2 >= 1 else None


def _proxy_date(y: int, m: int, d: int) -> date:
    """A date in 2000..2399 with the same weekday and month length as (y, m, d): the
    Gregorian calendar repeats every 400 years, so the calendar works for any year."""
    return date(2000 + y % 400, m, d)


def _days_in(y: int, m: int) -> int:
    return _calendar.monthrange(2000 + y % 400, m)[1]


def _add_days(y: int, m: int, d: int, delta: int) -> tuple[int, int, int] | None:
    moved = _proxy_date(y, m, d) + timedelta(days=delta)
    year = y - y % 400 + (moved.year - 2000)
    return (year, moved.month, moved.day) if year >= 1 else None


# ---- the handler ------------------------------------------------------------------------

_SITE_NAMES = {
    "calendar": "Riverside Events Calendar",
    "session_ids": "Harbor Hardware",
    "facets": "Juniper Outfitters",
    "deep_paths": "Cedar Docs",
    "random_links": "Ember Link Directory",
}

_DESCRIPTIONS = {
    "calendar": ("An events calendar: /calendar?month=YYYY-MM links to the previous and next "
                 "month and year and to every day (&day=D); any month answers 200, so "
                 "next-month links go on forever."),
    "session_ids": (f"A {SESSION_PAGES + 1}-page site (/, /p/0.html .. /p/{SESSION_PAGES - 1}.html) "
                    "whose every link carries a session id (;jsessionid=, ?sid= or ?PHPSESSID=) "
                    "that is new on every page view; without the ids there are "
                    f"{SESSION_PAGES + 1} real pages."),
    "facets": ("A shop listing /shop with 10 filters x 10 values; every page links to the "
               "listing with one filter added, changed or removed, parameters in varying "
               "order: 11^10 filter states in many orders, but only home, /shop and the 100 "
               "one-filter listings are real."),
    "deep_paths": ("Every path answers 200; a page links to relative children ./x/ and repeats "
                   "its last two segments (a/b/ on /a/b/ gives /a/b/a/b/), so paths grow "
                   "without end."),
    "random_links": (f"Every URL answers 200 with {RANDOM_LINKS[0]}-{RANDOM_LINKS[1]} links to "
                     "random new URLs on the same host (RNG seeded by the path), so every level "
                     "of links is new."),
}


class TrapHandler:
    """The HostHandler of one trap host: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, kind: str, hostname: str, cache_pages: int = TRAP_CACHE_PAGES):
        if kind not in KINDS:
            raise ValueError(f"unknown trap kind {kind!r}")
        self.kind = kind
        self.hostname = normalize_host(hostname)
        self.site = _SITE_NAMES[kind]
        self._cache_pages = cache_pages
        self._lock = threading.Lock()
        self._views: dict[str, int] = {}  # session_ids: page path -> views so far (<= 21 keys)
        # functools.lru_cache is thread-safe and bounded: the only per-URL state.
        self._cached = functools.lru_cache(maxsize=cache_pages)(self._build)
        self._session_template = functools.lru_cache(maxsize=SESSION_PAGES + 1)(self._build_session)

    def __repr__(self) -> str:
        return f"TrapHandler({self.kind!r}, {self.hostname!r})"

    def fresh(self) -> "TrapHandler":
        """The same host with its session view counters reset (and an empty cache)."""
        return TrapHandler(self.kind, self.hostname, self._cache_pages)

    def cache_info(self):
        """lru_cache statistics of the response cache (currsize never exceeds maxsize)."""
        return self._cached.cache_info()

    def base(self, web) -> str:
        return f"http://{self.hostname}:{web.port}"

    # ---- description ----------------------------------------------------------------

    def describe(self, web) -> TrapHost:
        base = self.base(web)
        real_pages: int | None = None
        config: dict[str, object] = {}
        if self.kind == "calendar":
            config = {"path": "/calendar", "start_month": _month_str(*START_MONTH),
                      "start_url": f"{base}/calendar?month={_month_str(*START_MONTH)}"}
        elif self.kind == "session_ids":
            urls = (base + "/",) + tuple(f"{base}/p/{n}.html" for n in range(SESSION_PAGES))
            real_pages = len(urls)
            config = {"session_params": SESSION_PARAMS, "real_urls": urls}
        elif self.kind == "facets":
            urls = (base + "/", base + "/shop") + tuple(
                f"{base}/shop?{name}={value}" for name, values in FACETS.items() for value in values)
            real_pages = len(urls)
            config = {"listing": base + "/shop", "filters": FACETS, "real_urls": urls}
        elif self.kind == "deep_paths":
            config = {"segments": DEEP_SEGMENTS}
        elif self.kind == "random_links":
            config = {"links_per_page": RANDOM_LINKS}
        return TrapHost(self.hostname, self.kind, base + "/", real_pages, _DESCRIPTIONS[self.kind],
                        config)

    # ---- serving --------------------------------------------------------------------

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        path = path.split("#", 1)[0]
        if path.split("?", 1)[0] == "/robots.txt":
            return self._robots()
        if self.kind == "session_ids":
            return self._serve_session(web, path)
        resource = self._cached(web.seed, web.port, path)
        return answer(resource, headers)

    def _robots(self) -> Response:
        return robots_allow_all(self.hostname)

    def _build(self, seed: int, port: int, path: str) -> Resource | None:
        bare, _, query = path.partition("?")
        build: Callable[..., str | None] = getattr(self, "_page_" + self.kind)
        text = build(seed, f"http://{self.hostname}:{port}", bare, query)
        return None if text is None else _resource(text.encode("utf-8"))

    def _page(self, seed: int, text_key: tuple, title: str, nav: list[tuple[str, str]],
              blocks: list[str], aside_title: str, aside: list[tuple[str, str]],
              head_extra: tuple[str, ...] = (), home_href: str = "/") -> str:
        return _render(seed, (self.kind, *text_key), site=self.site, title=title,
                       nav=[(home_href, "Home"), *nav], blocks=blocks, aside_title=aside_title,
                       aside=aside, head_extra=head_extra, home_href=home_href)

    def _home(self, seed: int, intro: str, links: list[tuple[str, str]],
              aside: list[tuple[str, str]] | None = None) -> str:
        return self._page(seed, ("home",), "Home", links[:3],
                          [f"<p>{intro}</p>", "<ul>", *(_li(h, t) for h, t in links), "</ul>"],
                          "Start here", aside if aside is not None else links)

    # ---- calendar ---------------------------------------------------------------------

    def _page_calendar(self, seed: int, base: str, bare: str, query: str) -> str | None:
        start = _month_str(*START_MONTH)
        if bare == "/":
            rng = Random(stable_int(seed, "calendar-home"))
            y, m = START_MONTH
            days = sorted(rng.sample(range(1, _days_in(y, m) + 1), 5))
            links = [(f"/calendar?month={start}", "Events this month"), ("/calendar", "Calendar")]
            links += [(f"/calendar?month={start}&day={d}", f"What's on: {d} {_MONTHS[m]}")
                      for d in days]
            return self._home(seed, "Concerts, markets, talks and club nights: browse the "
                              "calendar month by month or day by day.", links)
        if bare != "/calendar":
            return None
        params = dict(parse_qsl(query, keep_blank_values=True))
        y, m = _parse_month(params.get("month")) or START_MONTH
        day = params.get("day", "")
        d = int(day) if day.isascii() and day.isdigit() and len(day) <= 2 else 0
        if 1 <= d <= _days_in(y, m):
            return self._calendar_day(seed, base, y, m, d)
        return self._calendar_month(seed, base, y, m)

    @staticmethod
    def _events(seed: int, y: int, m: int, d: int) -> list[tuple[str, str]]:
        rng = Random(stable_int(seed, "calendar-events", y, m, d))
        return [(f"{between(rng, 8, 22):02d}:{rng.choice(('00', '15', '30', '45'))}",
                 heading(rng)) for _ in range(between(rng, 0, 3))]

    def _calendar_month(self, seed: int, base: str, y: int, m: int) -> str:
        rng = Random(stable_int(seed, "calendar-links", y, m))
        name = f"{_MONTHS[m]} {y}"

        def link(target: tuple[int, int] | None, text: str) -> tuple[str, str] | None:
            if target is None:
                return None
            month = _month_str(*target)
            return (_href_style(rng, base, f"/calendar?month={month}", f"?month={month}"), text)

        pager = [link(_add_months(y, m, -12), "« Previous year"),
                 link(_add_months(y, m, -1), "‹ Previous month"),
                 link(_add_months(y, m, 1), "Next month ›"),
                 link(_add_months(y, m, 12), "Next year »")]
        pager = [p for p in pager if p is not None]
        month = _month_str(y, m)
        rows = ["<table class=\"calendar\">", "<thead><tr>"
                + "".join(f"<th>{w[:3]}</th>" for w in _WEEKDAYS) + "</tr></thead>", "<tbody>"]
        first = _proxy_date(y, m, 1).weekday()
        cells = ["<td></td>"] * first
        for d in range(1, _days_in(y, m) + 1):
            events = len(self._events(seed, y, m, d))
            href = _href_style(rng, base, f"/calendar?month={month}&day={d}",
                               f"?month={month}&day={d}")
            note = f' <span class="events">{events} event{"s" if events != 1 else ""}</span>' if events else ""
            cells.append(f"<td>{_a(href, str(d))}{note}</td>")
        cells += ["<td></td>"] * (-len(cells) % 7)
        for i in range(0, len(cells), 7):
            rows.append("<tr>" + "".join(cells[i:i + 7]) + "</tr>")
        rows += ["</tbody>", "</table>"]
        blocks = ['<p class="pager">' + " | ".join(_a(h, t) for h, t in pager) + "</p>", *rows]
        highlights = []
        for d in sorted(rng.sample(range(1, _days_in(y, m) + 1), 6)):
            for _time, title in self._events(seed, y, m, d)[:1]:
                highlights.append((f"/calendar?month={month}&day={d}", f"{d} {_MONTHS[m]}: {title}"))
        return self._page(seed, ("month", y, m), f"Events in {name}",
                          [("/calendar", "This month"), pager[-2]], blocks, "Highlights",
                          highlights + pager)

    def _calendar_day(self, seed: int, base: str, y: int, m: int, d: int) -> str:
        rng = Random(stable_int(seed, "calendar-day-links", y, m, d))
        weekday = _WEEKDAYS[_proxy_date(y, m, d).weekday()]
        month = _month_str(y, m)
        links = [(_href_style(rng, base, f"/calendar?month={month}", f"?month={month}"),
                  f"All of {_MONTHS[m]} {y}")]
        for delta, text in ((-1, "‹ Previous day"), (1, "Next day ›"), (7, "Same day next week »")):
            other = _add_days(y, m, d, delta)
            if other is not None:
                oy, om, od = other
                target = f"/calendar?month={_month_str(oy, om)}&day={od}"
                links.append((_href_style(rng, base, target, target[len("/calendar"):]), text))
        events = self._events(seed, y, m, d)
        items = [f"<li><time>{t}</time> {title}</li>" for t, title in events] or \
            ["<li>Nothing on yet: check back soon.</li>"]
        blocks = ['<p class="pager">' + " | ".join(_a(h, t) for h, t in links) + "</p>",
                  '<ul class="events">', *items, "</ul>"]
        return self._page(seed, ("day", y, m, d), f"{weekday} {d} {_MONTHS[m]} {y}",
                          [("/calendar", "This month")], blocks, "More dates", links)

    # ---- session ids ------------------------------------------------------------------

    _SESSION_MARKS = ("@@J@@", "@@S@@", "@@P@@")  # jsessionid, sid, PHPSESSID placeholders

    @staticmethod
    def _session_page(bare: str) -> str | None:
        """The real page a path names ('/p/3.html;jsessionid=X' -> '/p/3.html'), or None."""
        bare = bare.split(";", 1)[0]
        if bare == "/":
            return bare
        if bare.startswith("/p/") and bare.endswith(".html"):
            n = bare[3:-5]
            if n.isascii() and n.isdigit() and str(int(n)) == n and int(n) < SESSION_PAGES:
                return bare
        return None

    def _serve_session(self, web, path: str) -> Response:
        page = self._session_page(path.split("?", 1)[0])
        if page is None:
            return error_response(404, "Not Found")
        with self._lock:
            view = self._views.get(page, 0)
            self._views[page] = view + 1
        digest = hashlib.blake2b(repr((web.seed, page, view)).encode("utf-8"), digest_size=16,
                                 person=b"demoweb-session").digest()
        number = int.from_bytes(digest, "big")
        phpsessid = "".join("0123456789abcdefghijklmnopqrstuv"[(number >> (5 * i)) & 31]
                            for i in range(25, -1, -1))
        body = self._session_template(web.seed, web.port, page)
        for mark, value in zip(self._SESSION_MARKS, (digest.hex().upper(), digest.hex(), phpsessid)):
            body = body.replace(mark, value)
        data = body.encode("utf-8")
        return Response(200, [("Content-Type", HTML_TYPE), ("Content-Length", str(len(data))),
                              ("Cache-Control", "private, no-store")], data)

    def _build_session(self, seed: int, port: int, page: str) -> str:
        """The page's HTML with placeholders where the session id goes."""
        base = f"http://{self.hostname}:{port}"
        n = -1 if page == "/" else int(page[3:-5])
        rng = Random(stable_int(seed, "session-links", n))
        j, s, p = self._SESSION_MARKS

        def href(target: str) -> str:
            r = rng.random()
            if r < 0.40:
                out = f"{target};jsessionid={j}"
            elif r < 0.70:
                out = f"{target}?sid={s}"
            elif r < 0.95:
                out = f"{target}?PHPSESSID={p}"
            else:
                out = f"{target};jsessionid={j}?sid={s}"
            return base + out if rng.random() < 0.15 else out

        def title(k: int) -> str:
            return title_words(Random(stable_int(seed, "session-title", k)), 2, 4)

        nav = [(href(f"/p/{k}.html"), title(k)) for k in range(3) if k != n]
        others = [k for k in range(SESSION_PAGES) if k != n]
        picks = rng.sample(others, 8)
        nxt = (n + 1) % SESSION_PAGES
        if nxt not in picks and nxt != n:
            picks.append(nxt)  # every page reachable from the home page
        if n == -1:
            picks = list(range(SESSION_PAGES))
        body_links = [(href(f"/p/{k}.html"), title(k)) for k in picks]
        blocks = ['<p class="account">Not signed in. '
                  + _a(href("/"), "Back to the shop front") + "</p>",
                  "<ul class=\"catalogue\">", *(_li(h, t) for h, t in body_links), "</ul>"]
        return self._page(seed, ("page", n), "Home" if n == -1 else title(n), nav, blocks,
                          "Customers also viewed", [(href("/"), "Home")] + body_links[:5],
                          home_href=href("/"))

    # ---- faceted navigation -----------------------------------------------------------

    @staticmethod
    def _facet_state(query: str) -> list[tuple[str, str]]:
        """The known filters of a query in order of first appearance (last value wins)."""
        state: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            if value in FACETS.get(name, ()):
                state[name] = value
        return list(state.items())

    @staticmethod
    def _shop_url(state: list[tuple[str, str]]) -> str:
        return "/shop" + ("?" + "&".join(f"{k}={v}" for k, v in state) if state else "")

    def _page_facets(self, seed: int, base: str, bare: str, query: str) -> str | None:
        if bare == "/":
            links = [("/shop", "Shop everything")]
            links += [(f"/shop?{name}={values[i % 10]}", f"{name.capitalize()}: {values[i % 10]}")
                      for i, (name, values) in enumerate(FACETS.items())]
            return self._home(seed, "Clothing and outdoor gear. Filter the catalogue by colour, "
                              "size, brand and more.", links)
        if bare != "/shop":
            return None
        state = self._facet_state(query)
        canonical = tuple(sorted(state, key=lambda kv: list(FACETS).index(kv[0])))
        active = dict(state)

        def with_filter(name: str, value: str) -> str:
            new = [(k, value if k == name else v) for k, v in state]
            if name not in active:
                pos = Random(stable_int(seed, "facet-order", canonical, name, value)).randint(0, len(new))
                new.insert(pos, (name, value))
            return self._shop_url(new)

        def without(name: str) -> str:
            return self._shop_url([(k, v) for k, v in state if k != name])

        sidebar = ['<div class="filters">']
        for name, values in FACETS.items():
            sidebar.append(f"<h3>{name.capitalize()}</h3>")
            sidebar.append('<ul class="facet">')
            for value in values:
                if active.get(name) == value:
                    sidebar.append(f"<li><strong>{value}</strong> {_a(without(name), '(remove)')}</li>")
                else:
                    sidebar.append(_li(with_filter(name, value), value))
            sidebar.append("</ul>")
        sidebar.append("</div>")
        chips = [f'<li class="chip">{k}: {v} {_a(without(k), "×")}</li>' for k, v in state]
        if chips:
            chips.append(_li("/shop", "Clear all filters"))
        rng = Random(stable_int(seed, "facet-products", canonical))
        products = []
        for _ in range(12):
            price = between(rng, 5, 400) + rng.choice((0.0, 0.5, 0.95, 0.99))
            colour = active.get("color") or rng.choice(FACETS["color"])
            products.append(f'<li class="product"><h3>{title_words(rng, 2, 3)}</h3>'
                            f"<p>{colour}, € {price:.2f}</p></li>")
        label = ", ".join(f"{k} {v}" for k, v in canonical) or "everything"
        blocks = ['<ul class="chips">', *chips, "</ul>", *sidebar,
                  f'<p class="count">{between(rng, 3, 480)} products</p>',
                  '<ul class="products">', *products, "</ul>"]
        aside = [(with_filter(name, FACETS[name][between(rng, 0, 9)]), f"Popular: {name}")
                 for name in rng.sample(list(FACETS), 3)]
        head = (f'<link rel="canonical" href="{html.escape(base + self._shop_url(list(canonical)))}">',)
        return self._page(seed, ("shop", canonical), f"Shop: {label}", [("/shop", "Shop")], blocks,
                          "Popular filters", aside, head_extra=head)

    # ---- ever-deeper paths ------------------------------------------------------------

    def _page_deep_paths(self, seed: int, base: str, bare: str, query: str) -> str | None:
        segments = [s for s in bare.split("/") if s]
        rng = Random(stable_int(seed, "deep-links", bare))
        children = [(rng.choice(("./", "")) + f"{s}/", f"{s}/") for s in
                    rng.sample(DEEP_SEGMENTS, between(rng, 4, 6))]
        if len(segments) >= 2:
            again = f"{segments[-2]}/{segments[-1]}/"
            children.append((again, "Same again: " + again))
        elif segments:
            children.append((f"{segments[-1]}/", f"Same again: {segments[-1]}/"))
        nav = [("../", "Up one level")] if segments else []
        crumbs = []
        shown = segments[-6:]
        prefix = "/" + "/".join(segments[:len(segments) - len(shown)])
        for s in shown:
            prefix = prefix.rstrip("/") + "/" + s
            crumbs.append(_a(prefix + "/", s))
        blocks = ['<p class="breadcrumb">' + " › ".join([_a("/", "Docs"), *(["…"] if len(segments) > 6 else []),
                                                         *crumbs]) + "</p>",
                  "<h2>In this folder</h2>", '<ul class="children">',
                  *(_li(h, t) for h, t in children), "</ul>"]
        title = "Docs: " + " / ".join(segments[-4:]) if segments else "Home"
        return self._page(seed, ("path", bare), title, nav, blocks, "Browse", children)

    # ---- random links -----------------------------------------------------------------

    def _page_random_links(self, seed: int, base: str, bare: str, query: str) -> str | None:
        key = bare + ("?" + query if query else "")
        rng = Random(stable_int(seed, "random-links", key))
        links = []
        for _ in range(between(rng, *RANDOM_LINKS)):
            w1, w2 = rng.choice(_URL_WORDS), rng.choice(_URL_WORDS)
            n = rng.randrange(10**9)
            shape = rng.randrange(6)
            if shape == 0:
                target = f"/r/{n:08x}.html"
            elif shape == 1:
                target = f"/{w1}/{w2}-{n}.html"
            elif shape == 2:
                target = f"/item?id={n}"
            elif shape == 3:
                target = f"/search?q={w1}+{w2}&page={n % 97 + 1}&ref={n:x}"
            elif shape == 4:
                target = f"/{w1}/{n:x}/"
            else:
                target = f"/t/{n}?ref={w2}"
            links.append((base + target if rng.random() < 0.2 else target, f"{w1} {w2}".capitalize()))
        title = "Home" if key == "/" else title_words(rng, 2, 5)
        blocks = ['<p class="lead">Handpicked links, freshly shuffled for you.</p>', '<ul class="links">',
                  *(_li(h, t) for h, t in links[: len(links) // 2]), "</ul>"]
        return self._page(seed, ("url", key), title, [], blocks, "More links", links[len(links) // 2:])
