"""Script-built magazine sites, opt-in: SITES hosts of STORIES + 1 pages each whose text and
links exist only after their script runs, and whose pages load what a real single-page site
loads beside it: a stylesheet with a web font, a logo, one picture a story and a video on the
home page. A rendering crawl needs none of those for the text or the links; a browser that is
let load them asks each host for them on every page. The render benchmark crawls them
(bench/render.py); `make demo` does not.

Enable:  DemoWeb(..., spa_sites=True)   (or add_spa_sites(web))
         python -m demoweb serve --spa-sites   (serve line ends ' spa_sites=10')
Read:    spa_sites(web) -> [SpaSite]: every page a rendering crawl finds (home first), the ones
         only a browser finds (js_only), the subresources a page loads for its text (script,
         stylesheet, JSON) and the media it would load besides (images, font, video).

Each host (spa-site-0 ... spa-site-9):
  /                 the shell: <div id="app">, a <noscript>, the stylesheet, the logo, the
                    script. Every page is this shell with its own title (ETag, 304).
  /story/1..N       the same shell; the script fetches /api/story/<n>.json ({title, text,
                    links, picture}) and writes the text, the links (to the next two stories
                    and home) and the story's picture; the home's JSON links every story and
                    the home shows a video besides.
  /static/app.js    the script, the same bytes on every host (a shared framework: archived
                    once, the other hosts' copies are revisits);
  /static/site.css  the stylesheet (a @font-face of /static/font.woff2, a background image);
  /static/*.png, /media/*.jpg, /media/intro.mp4: media (bytes only; nothing decodes them).
Static files answer with Cache-Control max-age and an ETag (a browser cache reuses them within
the day); the JSON with no-cache and an ETag (to be asked again, or revalidated).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Mapping

from ..host_protocol import HostPlugin, bare_path, register_hosts
from ..page_shell import html_page
from ..prose import paragraphs
from ..randomness import rng_for
from ..responses import HTML_TYPE, Response, answer, body_response, make_resource, robots_allow_all

SITES = 10  # hosts
STORIES = 19  # story pages a host, besides its home
NEXT_STORIES = 2  # each story links the next two (and home)
JSON_TYPE = "application/json"
SCRIPT_TYPE = "text/javascript; charset=utf-8"
CSS_TYPE = "text/css; charset=utf-8"
APP, CSS, LOGO, HERO, FONT = "/static/app.js", "/static/site.css", "/static/logo.png", "/static/hero.png", "/static/font.woff2"
VIDEO = "/media/intro.mp4"
MEDIA_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".woff2": "font/woff2", ".mp4": "video/mp4"}
MEDIA_BYTES = {LOGO: 6_000, HERO: 40_000, FONT: 30_000, VIDEO: 200_000}
PICTURE_BYTES = 25_000  # a story's picture

APP_JS = """
var path = location.pathname === '/' ? '/index' : location.pathname;
fetch('/api' + path + '.json').then(function (r) { return r.json(); })
  .then(function (view) {
    var html = '<h1>' + view.title + '</h1>';
    if (view.picture) { html += '<img src="' + view.picture + '" alt="">'; }
    if (view.video) { html += '<video src="' + view.video + '" preload="auto" muted></video>'; }
    view.text.forEach(function (p) { html += '<p>' + p + '</p>'; });
    html += '<ul>';
    view.links.forEach(function (l) { html += '<li><a href="' + l.href + '">' + l.title + '</a></li>'; });
    document.getElementById('app').innerHTML = html + '</ul>';
    document.title = view.title;
  });
"""
SITE_CSS = """@font-face { font-family: Demo; src: url(/static/font.woff2) format("woff2"); }
body { font-family: Demo, sans-serif; max-width: 48em; margin: auto; }
header { background: url(/static/hero.png) no-repeat; min-height: 4em; }
img { max-width: 100%; }
"""


def _story_path(n: int) -> str:
    return "/" if n == 0 else f"/story/{n}"


def _title(host: str, n: int) -> str:
    return f"{host} front page" if n == 0 else f"{host} story {n}"


def _shell(title: str) -> bytes:
    return html_page(title, ["<header></header>", f'<img src="{LOGO}" alt="logo">', '<div id="app"></div>',
                             "<noscript>This site needs JavaScript.</noscript>", f'<script src="{APP}"></script>'],
                     head=[f'<link rel="stylesheet" href="{CSS}">']).encode()


def _view(host: str, n: int) -> dict:
    """What the script of page n writes: its title, text, links, and the media it shows."""
    rng = rng_for("spa-site", host, n)
    if n == 0:
        links = [{"href": _story_path(k), "title": _title(host, k)} for k in range(1, STORIES + 1)]
        media = {"video": VIDEO}
    else:
        ahead = [k for k in range(n + 1, n + 1 + NEXT_STORIES) if k <= STORIES]
        links = [{"href": _story_path(k), "title": _title(host, k)} for k in (*ahead, 0)]
        media = {"picture": f"/media/{n}.jpg"}
    return {"title": _title(host, n), "text": paragraphs(rng, 0, 1500), "links": links, **media}


@functools.lru_cache(maxsize=64)
def _media(path: str) -> Response | None:
    """A media file's bytes (deterministic noise of its size) with a max-age."""
    if path in MEDIA_BYTES:
        size = MEDIA_BYTES[path]
    elif path.startswith("/media/") and path.endswith(".jpg") and path[7:-4].isdigit():
        size = PICTURE_BYTES
    else:
        return None
    body = rng_for("spa-site-media", path).randbytes(size)
    return make_resource(body, MEDIA_TYPES[path[path.rfind("."):]], None).response


@dataclass(frozen=True)
class SpaSite:
    hostname: str
    home: str
    pages: tuple[str, ...]  # every page a rendering crawl finds, home first
    js_only: tuple[str, ...]  # the pages a crawl that runs no script never finds
    needed: tuple[str, ...]  # what a render of every page loads for its text and links
    media: tuple[str, ...]  # what a render of every page would load besides (images, font, video)


def add_spa_sites(web) -> dict[str, str]:
    """Register the sites on `web` (in place); returns hostname -> kind."""
    return register_hosts(web, {f"site{i}": f"spa-site-{i}" for i in range(SITES)}, SpaSiteHandler)


def spa_sites(web) -> list[SpaSite]:
    return [h.describe(web) for h in web.special_handlers().values() if isinstance(h, SpaSiteHandler)]


PLUGIN = HostPlugin(option="spa_sites", summary_key="spa_sites",
                    help=f"add {SITES} script-built magazine sites that load a stylesheet, a font, pictures and a video",
                    install=add_spa_sites, homes=lambda web: [s.home for s in spa_sites(web)])


class SpaSiteHandler:
    """The HostHandler of one magazine site: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, kind: str, hostname: str):
        self.kind, self.hostname = kind, hostname
        self.label = hostname.split(".", 1)[0]
        self.shells = {_story_path(n): make_resource(_shell(_title(self.label, n)), HTML_TYPE, None)
                       for n in range(STORIES + 1)}
        self.static = {APP: make_resource(APP_JS.encode(), SCRIPT_TYPE, None),
                       CSS: make_resource(SITE_CSS.encode(), CSS_TYPE, None)}

    def describe(self, web) -> SpaSite:
        base = f"http://{self.hostname}:{web.port}"
        pages = tuple(base + _story_path(n) for n in range(STORIES + 1))
        api = tuple(base + ("/api/index.json" if n == 0 else f"/api/story/{n}.json") for n in range(STORIES + 1))
        media = (LOGO, HERO, FONT, VIDEO, *(f"/media/{n}.jpg" for n in range(1, STORIES + 1)))
        return SpaSite(self.hostname, pages[0], pages, pages[1:], (base + APP, base + CSS, *api),
                       tuple(base + m for m in media))

    def __call__(self, web, target: str, headers: Mapping[str, str]) -> Response:
        path = bare_path(target)
        if path == "/robots.txt":
            return robots_allow_all(self.hostname)
        if path in self.shells:
            return answer(self.shells[path], headers)
        if path in self.static:
            return answer(self.static[path], headers)
        served = self._api(path, headers) if path.startswith("/api/") else _media(path)
        if served is not None:
            return served
        return body_response(html_page("Not Found", ["<h1>Not Found</h1>"]).encode(), status=404)

    def _api(self, path: str, headers: Mapping[str, str]) -> Response | None:
        key = path.removeprefix("/api").removesuffix(".json")
        n = 0 if key == "/index" else int(key[7:]) if key.startswith("/story/") and key[7:].isdigit() else None
        if n is None or n > STORIES or (n == 0 and key != "/index"):
            return None
        resource = make_resource(json.dumps(_view(self.label, n)).encode(), JSON_TYPE, None)
        response = answer(resource, headers)
        # To be asked again (or revalidated) on every use: an API's answer may change at any time.
        return Response(response.status, [(k, "no-cache" if k == "Cache-Control" else v)
                                          for k, v in response.headers], response.body)

