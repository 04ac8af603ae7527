"""The one HTML page shell of the demo web, and the site layout most generated pages share.

html_page() writes every HTML document the demo web serves (generated sites, trap and
near-duplicate hosts, hostile hosts' small pages, error pages); site_body() is the
header/nav/main/aside/footer layout inside it. Callers pass text already escaped."""

from __future__ import annotations

import html
from typing import Iterable

VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
STYLE = "<style>body{font-family:sans-serif;max-width:48em;margin:auto}nav a{margin-right:1em}</style>"


def html_page(title: str, body: Iterable[str], *, head: Iterable[str] = (), layout: bool = True) -> str:
    """An HTML5 document: <title>, extra `head` lines, then the `body` lines. layout=False
    gives the bare document of small pages (no viewport, no style)."""
    lines = ["<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">']
    if layout:
        lines.append(VIEWPORT)
    lines.append(f"<title>{title}</title>")
    lines.extend(head)
    if layout:
        lines.append(STYLE)
    lines += ["</head>", "<body>", *body, "</body>", "</html>", ""]
    return "\n".join(lines)


def site_body(site: str, nav: Iterable[str], main: Iterable[str], aside_title: str,
              aside: Iterable[str], footer: Iterable[str]) -> list[str]:
    """The body lines of a site page: header with site name and a nav list of `nav` anchors,
    <main> with the `main` lines and an aside, then the footer lines."""
    return ["<header>", f'<p class="site-name">{site}</p>', "<nav><ul>",
            *(f"<li>{a}</li>" for a in nav), "</ul></nav>", "</header>",
            '<main id="main">', *main, "<aside>", f"<h2>{aside_title}</h2>", *aside, "</aside>",
            "</main>", "<footer>", *footer, "</footer>"]


def simple_page(title: str, body_html: str, heading: str | None = None) -> bytes:
    """A bare page: an <h1> (the title unless `heading` is given), then one block of body HTML."""
    return html_page(title, [f"<h1>{heading or title}</h1>", body_html], layout=False).encode("utf-8")


def esc(text: str) -> str:
    """Text content escaped for HTML (quotes kept)."""
    return html.escape(text, quote=False)


def anchor(href: str, text: str, rel: str | None = None) -> str:
    """<a href> with the href and text escaped."""
    rel_attr = f' rel="{rel}"' if rel else ""
    return f'<a href="{html.escape(href)}"{rel_attr}>{esc(text)}</a>'


def list_item(href: str, text: str) -> str:
    return f"<li>{anchor(href, text)}</li>"
