"""The HTML of the ordinary site's pages and its sitemap.

A page is 12-40 KB: a nav bar, an <article> of paragraphs from the seed's sentence pool
with inline links spread over them, a related-links aside and a footer. A new version
rewrites about a quarter of the paragraphs, so successive versions are near-duplicates,
like real edits; the links never change."""

from __future__ import annotations

from random import Random
from typing import Iterable

from .change_model import day_datetime
from .link_plan import Link, LinkPlan
from .page_shell import html_page, site_body
from .prose import heading, paragraph, paragraphs, sentence_pool, title_words
from .randomness import between, stable_int
from .site_shape import SiteShape
from .words import NAME_WORDS


def site_name(seed: int, host_index: int) -> str:
    rng = Random(stable_int(seed, "site", host_index))
    return " ".join(w.capitalize() for w in rng.sample(NAME_WORDS, 2))


def render_page(shape: SiteShape, plan: LinkPlan, host_index: int, kind: str, n: int,
                version: int) -> bytes:
    """The HTML of page (kind, n) as of `version` (the day its current version appeared)."""
    seed = shape.seed
    rng = Random(stable_int(seed, "text", host_index, kind, n))
    site = site_name(seed, host_index)
    title = "Home" if kind == "home" else title_words(rng, 2, 6)
    paras = paragraphs(rng, seed, between(rng, 12_000, 40_000))
    headings = [heading(rng) for _ in range(0, len(paras), 4)]
    if version > 0:
        # An edit rewrites about a quarter of the paragraphs; the rest stays.
        pool, _ = sentence_pool(seed)
        edit = Random(stable_int(seed, "edit", host_index, kind, n, version))
        for i in edit.sample(range(len(paras)), max(1, len(paras) // 4)):
            paras[i] = paragraph(edit, pool)

    # Inline links are spread evenly over the paragraphs, one sentence each.
    inline_at: dict[int, list[Link]] = {}
    for j, link in enumerate(plan.inline):
        inline_at.setdefault(j * len(paras) // max(1, len(plan.inline)), []).append(link)

    updated = day_datetime(version).date().isoformat()
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
    footer = [f"<p>&copy; 2026 {site}. All rights reserved.</p>", "<p>",
              *(link.html() for link in plan.footer), "</p>"]
    body = site_body(site, (link.html() for link in plan.nav), article, "Related",
                     _ul(link.html() for link in plan.related), footer)
    head = [f'<meta name="description" content="{paras[0][:150].rstrip()}">']
    return html_page(f"{title} | {site}", body, head=head).encode("utf-8")


def _ul(anchors: Iterable[str]) -> list[str]:
    return ["<ul>", *(f"<li>{a}</li>" for a in anchors), "</ul>"]


def render_sitemap(shape: SiteShape, host_index: int, lastmods: list[str]) -> bytes:
    """The sitemap of a host: every page_urls() entry with its lastmod (same order)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    for url, lastmod in zip(shape.page_urls(host_index), lastmods, strict=True):
        out.append(f"<url><loc>{url}</loc><lastmod>{lastmod}</lastmod></url>")
    out += ["</urlset>", ""]
    return "\n".join(out).encode("utf-8")
