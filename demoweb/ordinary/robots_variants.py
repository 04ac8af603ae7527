"""The ordinary site's robots.txt: one of eight variants per host, picked by host index."""

from __future__ import annotations

from .host_traits import ATOM_PATH, feed_path
from .site_shape import SiteShape

# Chosen by host_index % len(ROBOTS_VARIANTS). None = no robots.txt (404).
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


def robots_rules(shape: SiteShape, host_index: int) -> dict:
    """What the host's robots.txt says for User-agent *: disallow (path prefixes),
    crawl_delay (seconds or None), sitemaps (the sitemap URL, if listed), feeds (the Atom
    feed URL on hosts that list one: also a Sitemap: line), present (False: robots.txt is 404)."""
    variant = ROBOTS_VARIANTS[host_index % len(ROBOTS_VARIANTS)]
    if variant is None:
        return {"disallow": [], "crawl_delay": None, "sitemaps": [], "feeds": [], "present": False}
    base = shape.base_url(host_index)
    return {
        "disallow": ["/private/"] if variant["disallow_private"] else [],
        "crawl_delay": variant["crawl_delay"],
        "sitemaps": [base + "/sitemap.xml"] if variant["sitemap"] else [],
        "feeds": [base + ATOM_PATH] if feed_path(host_index) == ATOM_PATH else [],
        "present": True,
    }


def has_private_pages(host_index: int) -> bool:
    variant = ROBOTS_VARIANTS[host_index % len(ROBOTS_VARIANTS)]
    return bool(variant and variant["disallow_private"])


def robots_txt(shape: SiteShape, host_index: int) -> str | None:
    """The robots.txt text, None when the host has none."""
    rules = robots_rules(shape, host_index)
    if not rules["present"]:
        return None
    lines = [f"# robots.txt for {shape.hostname(host_index)}", "User-agent: *"]
    lines += [f"Disallow: {p}" for p in rules["disallow"]] or ["Disallow:"]
    if rules["crawl_delay"] is not None:
        lines.append(f"Crawl-delay: {rules['crawl_delay']}")
    if rules["sitemaps"] or rules["feeds"]:
        lines.append("")
        lines += [f"Sitemap: {url}" for url in rules["sitemaps"] + rules["feeds"]]
    return "\n".join(lines) + "\n"
