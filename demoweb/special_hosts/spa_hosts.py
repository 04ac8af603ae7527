"""Single-page-application hosts, opt-in: their content and links exist only after their
scripts run. A plain fetch sees an empty shell (a mount element, a <noscript> asking for
JavaScript and script tags); a browser that runs the scripts sees the pages and their links.

Enable:  DemoWeb(..., spa=True)   (or add_spa_hosts(web))
         python -m demoweb serve --spa   (serve line ends ' spa=3')
         DemoWebProcess(..., spa=True)
Read:    spa_hosts(web) -> [SpaHost]: every page a rendering crawl finds, which of them only a
         browser finds (js_only), the scripts and JSON the pages load, and the URL each page
         asks for that robots.txt disallows (a crawler must never request it).

The hosts (every page but the items of spa-more is the same shell; /static/app.js builds it):
  spa-json    content from a JSON endpoint: the shell of /, /articles/1..4 fetches
              /api/pages/<path>.json ({title, text, links}) and renders the text and links
              (/ -> 1, 2; 1 -> 3; 3 -> 4). robots.txt asks Crawl-delay 0.2 and disallows
              /tracking/, whose beacon every shell loads. The text of /articles/2 is new
              each day of the web's clock (DAILY_ARTICLE, daily_edition) while its shell
              stays the same bytes: only a crawler that renders sees it change.
  spa-router  client-side routing: the routes (/, /app/about, /app/team, /app/team/ada) are held
              in the script; its links change the view with history.pushState, and the
              server answers each route with the same shell, byte for byte (a crawler that
              archives it once writes the other routes as revisits, and must render them all).
  spa-more    a "Load more" button: the home page lists items from /api/items?page=N, two a
              page, three pages; items past the first page appear only after clicks. The
              item pages (/item/1.html .. /item/6.html) are plain HTML linking home.
Every shell and script answers with an ETag and honours If-None-Match (304); the scripts carry a
max-age (Cache-Control), the JSON no caching headers. Everything is deterministic
for a given day of the web.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping

from ..host_protocol import HostPlugin, bare_path, register_hosts
from ..page_shell import anchor, html_page
from ..prose import paragraph, sentence_pool
from ..randomness import rng_for
from ..responses import HTML_TYPE, Response, answer, body_response, make_resource, robots_allow_all

LABELS = {"json": "spa-json", "routes": "spa-router", "load_more": "spa-more"}
JSON_TYPE = "application/json"
SCRIPT_TYPE = "text/javascript; charset=utf-8"
APP = "/static/app.js"
BEACON = "/tracking/beacon.js"  # disallowed by spa-json's robots.txt
CRAWL_DELAY_S = 0.2  # spa-json's robots.txt: its render must be spaced by it
ITEMS_PER_PAGE, ITEM_PAGES = 2, 3

# spa-json: path -> (title, links)
ARTICLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/": ("Newsroom", ("/articles/1", "/articles/2")),
    "/articles/1": ("First article", ("/articles/3",)),
    "/articles/2": ("Second article", ()),
    "/articles/3": ("Third article", ("/articles/4",)),
    "/articles/4": ("Fourth article", ("/",)),
}
ROUTES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/": ("Router home", ("/app/about", "/app/team")),
    "/app/about": ("About us", ("/",)),
    "/app/team": ("The team", ("/app/team/ada",)),
    "/app/team/ada": ("Ada", ("/app/team",)),
}
ITEMS = tuple(f"/item/{n}.html" for n in range(1, ITEMS_PER_PAGE * ITEM_PAGES + 1))
ROUTER_SHELL_TITLE = "Router"  # the title of spa-router's one shell (its script sets each view's)
DAILY_ARTICLE = "/articles/2"  # spa-json: its JSON text goes on with the day's news


def daily_edition(day: float) -> str:
    """What the daily article's text goes on with on `day` of the web's clock: a paragraph of
    that day's news, so its text changes (not just a date line)."""
    return " " + paragraph(rng_for("spa-daily-article", int(day)), sentence_pool(0)[0])


def _text(title: str) -> str:
    return f"{title}: this text is written by the page's script, never sent as HTML. " * 3


def _shell(title: str, extra_scripts: tuple[str, ...] = ()) -> bytes:
    scripts = [f'<script src="{src}"></script>' for src in (APP, *extra_scripts)]
    return html_page(title, ['<div id="app"></div>', "<noscript>This site needs JavaScript.</noscript>",
                             *scripts]).encode()


RENDER = """
function render(view) {
  var app = document.getElementById('app');
  var html = '<h1>' + view.title + '</h1><p>' + view.text + '</p><ul>';
  view.links.forEach(function (href) { html += '<li><a href="' + href + '">' + href + '</a></li>'; });
  app.innerHTML = html + '</ul>';
  document.title = view.title;
}
"""
JSON_APP = RENDER + """
fetch('/api/pages' + (location.pathname === '/' ? '/index' : location.pathname) + '.json')
  .then(function (r) { return r.json(); }).then(render);
"""
ROUTER_APP = RENDER + """
var ROUTES = %s;
function show(path) {
  render(ROUTES[path]);
  document.querySelectorAll('#app a').forEach(function (a) {
    a.addEventListener('click', function (event) {
      event.preventDefault();
      history.pushState({}, '', a.getAttribute('href'));
      show(a.getAttribute('href'));
    });
  });
}
window.addEventListener('popstate', function () { show(location.pathname); });
show(location.pathname);
"""
MORE_APP = """
var app = document.getElementById('app');
app.innerHTML = '<h1>Catalogue</h1><ul id="items"></ul><button id="more">Load more</button>';
var next = 0;
function load() {
  fetch('/api/items?page=' + next).then(function (r) { return r.json(); }).then(function (answer) {
    answer.items.forEach(function (item) {
      var li = document.createElement('li');
      li.innerHTML = '<a href="' + item.href + '">' + item.title + '</a>';
      document.getElementById('items').appendChild(li);
    });
    next = answer.next;
    if (next === null) { document.getElementById('more').remove(); }
  });
}
document.getElementById('more').addEventListener('click', load);
load();
"""


def _view(title: str, links: tuple[str, ...], extra_text: str = "") -> dict:
    return {"title": title, "text": _text(title) + extra_text, "links": list(links)}


def _json(value) -> Response:
    return body_response(json.dumps(value).encode(), JSON_TYPE)


def _items(query: str) -> Response:
    page = int(query.removeprefix("page=")) if query.removeprefix("page=").isdigit() else 0
    if page >= ITEM_PAGES:
        return _json({"items": [], "next": None})
    chunk = ITEMS[page * ITEMS_PER_PAGE:(page + 1) * ITEMS_PER_PAGE]
    return _json({"items": [{"href": p, "title": f"Item {p[6:-5]}"} for p in chunk],
                  "next": page + 1 if page + 1 < ITEM_PAGES else None})


def _shell_answer(title: str, headers: Mapping[str, str], extra_scripts: tuple[str, ...] = ()) -> Response:
    """A shell as a static host serves it: with an ETag, 304 to a request that holds it."""
    return answer(make_resource(_shell(title, extra_scripts), HTML_TYPE, None), headers)


def _static(script: bytes, headers: Mapping[str, str]) -> Response:
    """A script as a static host serves it: an ETag and a max-age (a browser reuses it within
    the hour without asking), 304 to a request that holds it."""
    return answer(make_resource(script, SCRIPT_TYPE, None), headers)


def _json_host(path: str, query: str, day: float, headers: Mapping[str, str]) -> Response | None:
    if path in ARTICLES:
        return _shell_answer(ARTICLES[path][0], headers, (BEACON,))
    if path == APP:
        return _static(JSON_APP.encode(), headers)
    key = path.removeprefix("/api/pages").removesuffix(".json")
    key = "/" if key == "/index" else key
    if path.startswith("/api/pages/") and key in ARTICLES:
        return _json(_view(*ARTICLES[key], daily_edition(day) if key == DAILY_ARTICLE else ""))
    return None


def _router_host(path: str, query: str, day: float, headers: Mapping[str, str]) -> Response | None:
    if path in ROUTES:  # one index.html for every route, as a static host serves an app
        return _shell_answer(ROUTER_SHELL_TITLE, headers)
    if path == APP:
        routes = {p: _view(*view) for p, view in ROUTES.items()}
        return _static((ROUTER_APP % json.dumps(routes)).encode(), headers)
    return None


def _more_host(path: str, query: str, day: float, headers: Mapping[str, str]) -> Response | None:
    if path == "/":
        return _shell_answer("Catalogue", headers)
    if path == APP:
        return _static(MORE_APP.encode(), headers)
    if path == "/api/items":
        return _items(query)
    if path in ITEMS:
        return body_response(html_page(path, [f"<h1>{path}</h1>", f"<p>{_text(path)}</p>",
                                              f"<p>{anchor('/', 'Catalogue')}</p>"]).encode())
    return None


# kind -> the answer for (path, query, the web's day, request headers), None: not found
SERVED: dict[str, Callable[[str, str, float, Mapping[str, str]], Response | None]] = {
    "json": _json_host, "routes": _router_host, "load_more": _more_host}
PAGES: dict[str, tuple[str, ...]] = {"json": tuple(ARTICLES), "routes": tuple(ROUTES), "load_more": ("/", *ITEMS)}
ROBOTS: dict[str, tuple[str, ...]] = {"json": (f"Disallow: {BEACON}", f"Crawl-delay: {CRAWL_DELAY_S}")}


@dataclass(frozen=True)
class SpaHost:
    hostname: str
    kind: str  # json, routes or load_more
    home: str
    pages: tuple[str, ...]  # every page a rendering crawl finds, home first
    js_only: tuple[str, ...]  # the pages a crawl that runs no script never finds
    disallowed: tuple[str, ...]  # asked for by its pages, disallowed by robots.txt: never requested


def add_spa_hosts(web) -> dict[str, str]:
    """Register the SPA hosts on `web` (in place); returns hostname -> kind."""
    return register_hosts(web, LABELS, SpaHandler)


def spa_hosts(web) -> list[SpaHost]:
    return [h.describe(web) for h in web.special_handlers().values() if isinstance(h, SpaHandler)]


PLUGIN = HostPlugin(option="spa", summary_key="spa",
                    help="add single-page-application hosts whose content and links exist only after scripts run",
                    install=add_spa_hosts, homes=lambda web: [h.home for h in spa_hosts(web)])


class SpaHandler:
    """The HostHandler of one SPA host: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, kind: str, hostname: str):
        self.kind, self.hostname = kind, hostname

    def describe(self, web) -> SpaHost:
        base = f"http://{self.hostname}:{web.port}"
        pages = tuple(base + p for p in PAGES[self.kind])
        disallowed = (base + BEACON,) if self.kind == "json" else ()
        return SpaHost(self.hostname, self.kind, pages[0], pages, pages[1:], disallowed)

    def __call__(self, web, target: str, headers: Mapping[str, str]) -> Response:
        path = bare_path(target)
        if path == "/robots.txt":
            return robots_allow_all(self.hostname, *ROBOTS.get(self.kind, ()))
        query = target.split("?", 1)[1].split("#", 1)[0] if "?" in target else ""
        served = SERVED[self.kind](path, query, web.day, headers)
        if served is not None:
            return served
        return body_response(html_page("Not Found", ["<h1>Not Found</h1>"]).encode(), status=404)
