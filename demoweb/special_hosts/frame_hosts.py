"""A host whose pages are linked only through frames, an image map and meta refreshes,
opt-in: a crawler that reads nothing but <a href> finds its home page and nothing else.

Enable:  DemoWeb(..., frames=True)   (or add_frame_hosts(web))
         python -m demoweb serve --frames   (serve line ends ' frames=1')
         DemoWebProcess(..., frames=True)
Read:    frame_hosts(web) -> [FrameHost]: every page a complete crawl fetches, the image it
         shows (a resource, never fetched as a page) and URLs named only where no link is
         (a script, a comment), which a crawler never requests.

The pages, each reached one way only:
  /                     a frameset: <frame src> of /frames/nav.html and /frames/main.html
  /frames/nav.html      an image map: <area href> of /map/north.html and /map/south.html
  /frames/main.html     an <iframe src> of /frames/inner.html
  /frames/inner.html    <link rel="next"> to /series/2.html (in its head)
  /map/north.html       <meta http-equiv="refresh" content="0; url=/refresh/arrived.html">
  /map/south.html       a <base href="/deep/"> and a refresh to "landing.html": /deep/landing.html
  /series/2.html, /refresh/arrived.html, /deep/landing.html   ordinary pages linking home
Everything is deterministic; robots.txt allows all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..host_protocol import HostPlugin, bare_path, normalize_host
from ..page_shell import anchor, html_page
from ..responses import Response, body_response, robots_allow_all

LABEL = "frames"
IMAGE = "/img/map.png"
NEVER_LINKED = ("/never/in-script.html", "/never/in-comment.html")
# A 1x1 PNG: the image map's picture.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000100ffff03000006000557bfabd40000000049454e44ae426082")


def _frameset() -> str:
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">', "<title>Frames</title>", "</head>",
        '<frameset cols="25%,75%">', '<frame src="/frames/nav.html" name="nav">',
        '<frame src="/frames/main.html" name="main">', "<noframes><p>This site needs frames.</p></noframes>",
        "</frameset>", "</html>", ""])


def _page(title: str, body: list[str], head: tuple[str, ...] = ()) -> str:
    return html_page(title, [f"<h1>{title}</h1>", *body], head=head, layout=False)


def _refresh(target: str) -> str:
    return f'<meta http-equiv="refresh" content="0; url={target}">'


# path -> page markup (the home page, "/", is the frameset)
PAGES: dict[str, str] = {
    "/": _frameset(),
    "/frames/nav.html": _page("Navigation", [
        f'<img src="{IMAGE}" usemap="#compass" alt="compass" width="100" height="100">',
        '<map name="compass"><area shape="rect" coords="0,0,100,50" href="/map/north.html" alt="North">',
        '<area shape="rect" coords="0,50,100,100" href="../map/south.html" alt="South"></map>']),
    "/frames/main.html": _page("Main", [
        "<p>The main frame.</p>", '<iframe src="inner.html" title="inner"></iframe>',
        f"<script>var later = '{NEVER_LINKED[0]}';</script>",
        f'<!-- <a href="{NEVER_LINKED[1]}">retired</a> -->']),
    "/frames/inner.html": _page("Inner", ["<p>Part one of a series.</p>"],
                                head=('<link rel="next" href="/series/2.html">',)),
    "/map/north.html": _page("North", ["<p>Moving on.</p>"], head=(_refresh("/refresh/arrived.html"),)),
    "/map/south.html": _page("South", ["<p>Moving on.</p>"],
                             head=('<base href="/deep/">', _refresh("landing.html"))),
    **{path: _page(path, [f"<p>{anchor('/', 'Home')}</p>"])
       for path in ("/series/2.html", "/refresh/arrived.html", "/deep/landing.html")},
}


@dataclass(frozen=True)
class FrameHost:
    hostname: str
    home: str
    pages: tuple[str, ...]  # every page URL, home first: a complete crawl fetches them all
    resources: tuple[str, ...]  # loaded by a page, never fetched as one
    never_linked: tuple[str, ...]  # named in a script or a comment only: never requested


def add_frame_hosts(web) -> dict[str, str]:
    """Register the frame host on `web` (in place); returns hostname -> kind."""
    hostname = f"{LABEL}.{web.domain}"
    web.register_host(hostname, FrameHandler(hostname))
    return {hostname: "frames"}


def frame_hosts(web) -> list[FrameHost]:
    return [h.describe(web) for h in web.special_handlers().values() if isinstance(h, FrameHandler)]


PLUGIN = HostPlugin(option="frames", summary_key="frames",
                    help="add a host whose pages are linked only through frames, an image map and meta refreshes",
                    install=add_frame_hosts, homes=lambda web: [h.home for h in frame_hosts(web)])


class FrameHandler:
    """The HostHandler of the frame host: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, hostname: str):
        self.hostname = normalize_host(hostname)

    def describe(self, web) -> FrameHost:
        base = f"http://{self.hostname}:{web.port}"
        return FrameHost(self.hostname, base + "/", tuple(base + p for p in PAGES), (base + IMAGE,),
                         tuple(base + p for p in NEVER_LINKED))

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        path = bare_path(path)
        if path == "/robots.txt":
            return robots_allow_all(self.hostname)
        if path == IMAGE:
            return body_response(PNG, "image/png")
        page = PAGES.get(path)
        if page is not None:
            return body_response(page.encode())
        return body_response(_page("Not Found", []).encode(), status=404)
