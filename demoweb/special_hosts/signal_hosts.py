"""A host whose pages carry their own robots signals, opt-in: <meta name="robots"> and
X-Robots-Tag noindex/nofollow (for every crawler, for Googlebot only, for the crawler named
"recrawl"), and links with rel="nofollow", "ugc" and "sponsored".

Enable:  DemoWeb(..., page_signals=True)   (or add_signal_hosts(web))
         python -m demoweb serve --page-signals   (serve line ends ' page_signals=1')
         DemoWebProcess(..., page_signals=True)
Read:    signal_hosts(web) -> [SignalHost]: its pages by path with what each says, the
         paths a crawler following Google's defaults fetches, and those it never fetches.

Every page is an ordinary 200 page; the home page links each signal page plainly. What a
page says decides only what a crawler does with the page's own links: each signal page
links one page of its own (`/after/<name>.html`, linked from nowhere else), so whether that
page was requested shows whether the links were followed. Everything is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..host_protocol import HostPlugin, bare_path, normalize_host
from ..page_shell import anchor, html_page, list_item
from ..responses import Response, body_response, robots_allow_all

LABEL = "signals"
AGENT = "recrawl"  # the crawler's product token that the agent-specific signals name


@dataclass(frozen=True)
class SignalPage:
    """One signal page: its <meta> tags, X-Robots-Tag header lines and links (href, rel)."""

    meta: tuple[tuple[str, str], ...] = ()
    headers: tuple[str, ...] = ()
    links: tuple[tuple[str, str | None], ...] = ()
    noindex: bool = False  # for a crawler named AGENT following Google's defaults
    nofollow: bool = False


def _after(name: str, rel: str | None = None) -> tuple[tuple[str, str | None], ...]:
    return ((f"/after/{name}.html", rel),)


# path -> page. The expected flags are those of a crawler whose product token is AGENT.
PAGES: dict[str, SignalPage] = {
    "/meta-noindex.html": SignalPage(meta=(("robots", "noindex"),), links=_after("meta-noindex"), noindex=True),
    "/meta-nofollow.html": SignalPage(meta=(("ROBOTS", "NoFollow"),), links=_after("meta-nofollow"), nofollow=True),
    "/meta-none.html": SignalPage(meta=(("robots", "none"),), links=_after("meta-none"), noindex=True, nofollow=True),
    "/meta-agent.html": SignalPage(meta=((AGENT, "nofollow"),), links=_after("meta-agent"), nofollow=True),
    "/meta-googlebot.html": SignalPage(meta=(("googlebot", "noindex, nofollow"),), links=_after("meta-googlebot")),
    "/header-noindex.html": SignalPage(headers=("noindex",), links=_after("header-noindex"), noindex=True),
    "/header-nofollow.html": SignalPage(headers=("nofollow, noarchive",), links=_after("header-nofollow"),
                                        nofollow=True),
    "/header-agent.html": SignalPage(headers=("googlebot: noindex", f"{AGENT}: noindex, nofollow"),
                                     links=_after("header-agent"), noindex=True, nofollow=True),
    "/header-googlebot.html": SignalPage(headers=("googlebot: none",), links=_after("header-googlebot")),
    "/rel-links.html": SignalPage(links=(
        *_after("rel-nofollow", "nofollow"), *_after("rel-ugc", "external ugc"),
        *_after("rel-sponsored", "sponsored"), *_after("rel-noopener", "noopener"),
        ("/after/rel-both.html", "nofollow"), ("/after/rel-both.html", None))),
}
# /after/ pages a crawler following Google's defaults requests: the rest it never does.
FOLLOWED = ("/after/meta-noindex.html", "/after/meta-googlebot.html", "/after/header-noindex.html",
            "/after/header-googlebot.html", "/after/rel-noopener.html", "/after/rel-both.html")
AFTER_PATHS = tuple(dict.fromkeys(href for page in PAGES.values() for href, _ in page.links))


@dataclass(frozen=True)
class SignalHost:
    hostname: str
    home: str
    pages: Mapping[str, SignalPage]  # by URL
    fetched: tuple[str, ...]  # every URL a crawler following Google's defaults requests
    never_fetched: tuple[str, ...]  # URLs only linked in ways that ask not to follow
    agent: str = AGENT


def add_signal_hosts(web) -> dict[str, str]:
    """Register the signal host on `web` (in place); returns hostname -> kind."""
    hostname = f"{LABEL}.{web.domain}"
    web.register_host(hostname, SignalHandler(hostname))
    return {hostname: "page_signals"}


def signal_hosts(web) -> list[SignalHost]:
    return [h.describe(web) for h in web.special_handlers().values() if isinstance(h, SignalHandler)]


PLUGIN = HostPlugin(option="page_signals", summary_key="page_signals",
                    help="add a host whose pages say noindex/nofollow (robots <meta>, X-Robots-Tag) "
                         "and carry rel=nofollow links",
                    install=add_signal_hosts, homes=lambda web: [h.home for h in signal_hosts(web)])


class SignalHandler:
    """The HostHandler of the signal host: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, hostname: str):
        self.hostname = normalize_host(hostname)

    def describe(self, web) -> SignalHost:
        base = f"http://{self.hostname}:{web.port}"
        fetched = [base + "/", *(base + p for p in PAGES), *(base + p for p in FOLLOWED)]
        never = [base + p for p in AFTER_PATHS if p not in FOLLOWED]
        return SignalHost(self.hostname, base + "/", {base + p: page for p, page in PAGES.items()},
                          tuple(fetched), tuple(never))

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        path = bare_path(path)
        if path == "/robots.txt":
            return robots_allow_all(self.hostname)
        if path == "/":
            items = [list_item(p, p) for p in PAGES]
            return body_response(html_page("Page signals", ["<h1>Page signals</h1>", "<ul>", *items, "</ul>"],
                                           layout=False).encode())
        page = PAGES.get(path)
        if page is not None:
            meta = [f'<meta name="{name}" content="{content}">' for name, content in page.meta]
            links = [f"<p>{anchor(href, href, rel)}</p>" for href, rel in page.links]
            body = html_page(path, [f"<h1>{path}</h1>", "<p>A page with its own robots signals.</p>", *links],
                             head=meta, layout=False).encode()
            return body_response(body, extra=[("X-Robots-Tag", value) for value in page.headers])
        if path in AFTER_PATHS:
            return body_response(html_page(path, [f"<h1>{path}</h1>", f'<p>{anchor("/", "Home")}</p>'],
                                           layout=False).encode())
        return body_response(html_page("Not Found", ["<h1>Not Found</h1>"], layout=False).encode(), status=404)
