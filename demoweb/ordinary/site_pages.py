"""The HTML of the ordinary site's pages, its sitemap and its feeds.

A page is 12-40 KB: a nav bar, an <article> of paragraphs from the seed's sentence pool
with inline links spread over them, a related-links aside and a footer. A content change
(change_model.py) rewrites about a quarter of the paragraphs from the original, so
successive versions are near-duplicates, like real edits, and the article's "Updated" date
moves; a boilerplate-only change moves only the footer's view counter, outside the
<article>. The links never change."""

from __future__ import annotations

from random import Random
from typing import Iterable

from ..page_shell import html_page, site_body
from ..prose import heading, paragraph, paragraphs, sentence_pool, title_words
from ..randomness import between, stable_int
from ..responses import http_date
from ..words import NAME_WORDS
from .change_model import PageState, moment
from .host_traits import ATOM_PATH, RSS_PATH, feed_path
from .link_plan import Link, LinkPlan
from .site_shape import SiteShape


def site_name(seed: int, host_index: int) -> str:
    rng = Random(stable_int(seed, "site", host_index))
    return " ".join(w.capitalize() for w in rng.sample(NAME_WORDS, 2))


def render_page(shape: SiteShape, plan: LinkPlan, host_index: int, kind: str, n: int,
                state: PageState) -> bytes:
    """The HTML of page (kind, n) in `state` (its content version and change count)."""
    seed = shape.seed
    version = state.versions
    rng = Random(stable_int(seed, "text", host_index, kind, n))
    site = site_name(seed, host_index)
    title = "Home" if kind == "home" else title_words(rng, 2, 6)
    paras = paragraphs(rng, seed, between(rng, 12_000, 40_000))
    headings = [heading(rng) for _ in range(0, len(paras), 4)]
    if version > 0:
        # An edit rewrites about a quarter of the paragraphs; the rest stays.
        pool, _ = sentence_pool(seed)
        edit = Random(stable_int(seed, "edit", host_index, kind, n, version))  # from the original
        for i in edit.sample(range(len(paras)), max(1, len(paras) // 4)):
            paras[i] = paragraph(edit, pool)

    # Inline links are spread evenly over the paragraphs, one sentence each.
    inline_at: dict[int, list[Link]] = {}
    for j, link in enumerate(plan.inline):
        inline_at.setdefault(j * len(paras) // max(1, len(plan.inline)), []).append(link)

    updated = moment(state.last_change or 0.0).date().isoformat()
    article = ["<article>", f"<h1>{title}</h1>",
               f'<p class="meta">Updated <time datetime="{updated}">{updated}</time></p>']
    for i, para in enumerate(paras):
        if i % 4 == 0:
            section = i // 4 + 1
            article.append(f'<h2 id="section-{section}">{headings[section - 1]}</h2>')
        links = inline_at.get(i)
        if links:
            para += " See " + ", ".join(link.html() for link in links) + "."
        article.append(f"<p>{para}</p>")
    article.append("</article>")
    views = 1_000 + stable_int(seed, "views", host_index, kind, n, state.events) % 900_000
    footer = [f"<p>&copy; 2026 {site}. All rights reserved.</p>", "<p>",
              *(link.html() for link in plan.footer), "</p>",
              f'<p class="counter">Viewed {views:,} times</p>']
    body = site_body(site, (link.html() for link in plan.nav), article, "Related",
                     _ul(link.html() for link in plan.related), footer)
    head = [f'<meta name="description" content="{paras[0][:150].rstrip()}">']
    if kind == "home" and feed_path(host_index) == RSS_PATH:
        head.append(f'<link rel="alternate" type="application/rss+xml" title="{site}" href="{RSS_PATH}">')
    return html_page(f"{title} | {site}", body, head=head).encode("utf-8")


def _ul(anchors: Iterable[str]) -> list[str]:
    return ["<ul>", *(f"<li>{a}</li>" for a in anchors), "</ul>"]


def w3c_datetime(days: float | None) -> str:
    """A sitemap/Atom timestamp ('2026-01-05T13:04:11+00:00') of a time; EPOCH for None."""
    return moment(days or 0.0).isoformat()


def render_sitemap(shape: SiteShape, host_index: int, last_changes: list[float | None]) -> bytes:
    """The sitemap of a host: every page_urls() entry with the time of its last content
    change as <lastmod> (same order; None: never changed, EPOCH)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for url, last in zip(shape.page_urls(host_index), last_changes, strict=True):
        out.append(f"<url><loc>{url}</loc><lastmod>{w3c_datetime(last)}</lastmod></url>")
    out += ["</urlset>", ""]
    return "\n".join(out).encode("utf-8")


def render_feed(shape: SiteShape, host_index: int, entries: list[tuple[str, float, int]]) -> bytes:
    """The host's RSS or Atom feed: `entries` are (url, last content change, version), most
    recent first."""
    seed, base = shape.seed, shape.base_url(host_index)
    site = site_name(seed, host_index)
    updated = entries[0][1] if entries else None
    if feed_path(host_index) == ATOM_PATH:
        out = ['<?xml version="1.0" encoding="UTF-8"?>', '<feed xmlns="http://www.w3.org/2005/Atom">',
               f"<title>{site}</title>", f'<link href="{base}/"/>', f"<id>{base}/</id>",
               f"<updated>{w3c_datetime(updated)}</updated>"]
        for url, last, version in entries:
            out.append(f'<entry><title>Updated: {url[len(base):]}</title><link href="{url}"/>'
                       f"<id>{url}#v{version}</id><updated>{w3c_datetime(last)}</updated></entry>")
        out.append("</feed>")
    else:
        out = ['<?xml version="1.0" encoding="UTF-8"?>', '<rss version="2.0">', "<channel>",
               f"<title>{site}</title>", f"<link>{base}/</link>",
               f"<description>Recently changed pages of {site}</description>"]
        for url, last, version in entries:
            out.append(f"<item><title>Updated: {url[len(base):]}</title><link>{url}</link>"
                       f'<guid isPermaLink="false">{url}#v{version}</guid>'
                       f"<pubDate>{http_date(moment(last))}</pubDate></item>")
        out += ["</channel>", "</rss>"]
    return "\n".join(out + [""]).encode("utf-8")
