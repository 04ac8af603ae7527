"""The ordinary site's link graph: where each page links, and how each href is written.

A page's links depend only on (seed, host, page), never on the day: Zipf-skewed same-host
links, ~5-10 % cross-host links, the top pages in every nav bar, "next" and two "child"
links (2n+1, 2n+2) so every page is reachable from the home page within ~log2(pages) hops.
Hrefs mix relative, root-relative, dot-dot, absolute, protocol-relative and #fragment forms
to exercise a crawler's URL resolution."""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from ..prose import anchor_text
from ..randomness import between, stable_int, zipf
from .host_traits import RSS_PATH, feed_path
from .robots_variants import has_private_pages
from .site_shape import PRIVATE_PAGES, SiteShape


@dataclass(frozen=True)
class Link:
    url: str  # absolute, no fragment: what outlinks() reports
    href: str  # as written in the HTML (relative, absolute, protocol-relative, #fragment)
    text: str

    def html(self) -> str:
        return f'<a href="{self.href}">{self.text}</a>'


@dataclass(frozen=True)
class LinkPlan:
    """Where a page's links go in its HTML."""

    nav: tuple[Link, ...]
    inline: tuple[Link, ...]
    related: tuple[Link, ...]
    footer: tuple[Link, ...]

    def all(self) -> tuple[Link, ...]:
        return self.nav + self.inline + self.related + self.footer

    def urls(self) -> list[str]:
        """Absolute URLs, deduplicated, in document order."""
        return list(dict.fromkeys(link.url for link in self.all()))


def _maybe_fragment(rng: Random, href: str, target: str) -> str:
    if target != "/" and rng.random() < 0.1:
        return f"{href}#section-{between(rng, 1, 3)}"
    return href


def _href(shape: SiteShape, rng: Random, host_index: int, cur_dir: str, target: str) -> str:
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
        href = shape.base_url(host_index) + target
    else:
        href = f"//{shape.hostname(host_index)}:{shape.port}{target}"
    return _maybe_fragment(rng, href, target)


def build_link_plan(shape: SiteShape, host_index: int, kind: str, n: int) -> LinkPlan:
    rng = Random(stable_int(shape.seed, "links", host_index, kind, n))
    base = shape.base_url(host_index)
    cur_dir = {"home": "/", "p": "/p/", "private": "/private/"}[kind]
    own_path = {"home": "/", "p": f"/p/{n}.html", "private": f"/private/{n}.html"}[kind]
    has_private = has_private_pages(host_index)
    zipf_pages = zipf(shape.pages_per_host)

    def same_host(target: str, text: str | None = None) -> Link:
        return Link(base + target, _href(shape, rng, host_index, cur_dir, target),
                    text or anchor_text(rng))

    def cross_host() -> Link:
        # Other host skewed to low indices (host 0 is the web's "portal"), then page.
        other = host_index
        for idx in zipf(shape.hosts).sample(rng, 8):
            if idx != host_index:
                other = idx
                break
        if other == host_index:
            other = (host_index + 1) % shape.hosts
        target = "/" if rng.random() < 0.3 else f"/p/{zipf_pages.sample(rng, 1)[0]}.html"
        other_base = shape.base_url(other)
        href = other_base + target if rng.random() < 0.85 else f"//{shape.hostname(other)}:{shape.port}{target}"
        return Link(other_base + target, _maybe_fragment(rng, href, target), anchor_text(rng))

    nav: list[Link] = []
    inline: list[Link] = []
    related: list[Link] = []
    footer: list[Link] = []

    if kind != "home":
        nav.append(same_host("/", "Home"))
    # The top pages are in every nav bar: part of why they are so popular.
    for top in range(min(5 if kind != "home" else 10, shape.pages_per_host)):
        if f"/p/{top}.html" != own_path:
            nav.append(same_host(f"/p/{top}.html"))

    # Zipf-chosen same-host links and ~5-10 % cross-host links.
    total = rng.randint(10, 40) if kind == "p" else rng.randint(12, 20)
    n_cross = round(total * rng.uniform(0.05, 0.10)) if shape.hosts > 1 else 0
    if kind == "home" and shape.hosts > 1:
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
            if child < shape.pages_per_host:
                related.append(same_host(f"/p/{child}.html"))
    elif kind == "private":
        related.append(same_host(f"/private/{(n + 1) % PRIVATE_PAGES}.html"))

    if has_private and kind == "home":
        footer.append(same_host("/private/0.html", "Members area"))
    elif has_private and kind == "p" and rng.random() < 0.3:
        for k in rng.sample(range(PRIVATE_PAGES), rng.randint(1, 2)):
            inline.insert(rng.randint(0, len(inline)), same_host(f"/private/{k}.html"))
    footer.append(same_host("/sitemap.xml", "Sitemap"))
    if kind == "home" and feed_path(host_index) == RSS_PATH:
        footer.append(same_host(RSS_PATH, "RSS feed"))
    return LinkPlan(tuple(nav), tuple(inline), tuple(related), tuple(footer))
