"""Per-host habits of the ordinary site that real servers differ in: which validators they
send and whether they publish a feed of recently changed pages. Picked by host index, so a
test knows them without asking.

Validators (pages only; robots.txt, sitemaps and feeds always carry honest ones), with
DemoWeb(validators="mixed"), the default:
  host_index % 10 == 8   "none":  no ETag, no Last-Modified: a conditional GET always gets 200
  host_index % 10 == 9   "lying": no ETag, and Last-Modified is always the web's "now", so
                         If-Modified-Since never matches and the date says nothing; its
                         sitemap's <lastmod> says "now" for every page too
  otherwise              "honest": ETag of the bytes, Last-Modified of the last change; 304
                         when either matches
DemoWeb(validators="honest") makes every host honest.

Feeds of the 20 most recently changed pages (content changes only):
  host_index % 4 == 1    RSS 2.0 at /feed.rss, linked from the home page (<link rel=alternate>
                         in its head and an anchor in its footer)
  host_index % 4 == 3    Atom at /feed.atom, listed in robots.txt as a Sitemap: line (these
                         hosts always have a robots.txt; robots_rules()["feeds"] names it)
"""

from __future__ import annotations

VALIDATOR_MODES = ("mixed", "honest")
FEED_ENTRIES = 20
RSS_PATH, ATOM_PATH = "/feed.rss", "/feed.atom"


def validator_policy(host_index: int, mode: str = "mixed") -> str:
    """'honest', 'none' or 'lying' for the pages of a host."""
    if mode not in VALIDATOR_MODES:
        raise ValueError(f"validators must be one of {VALIDATOR_MODES}, not {mode!r}")
    if mode == "honest":
        return "honest"
    return {8: "none", 9: "lying"}.get(host_index % 10, "honest")


def feed_path(host_index: int) -> str | None:
    """The host's feed path, None if it publishes none."""
    return {1: RSS_PATH, 3: ATOM_PATH}.get(host_index % 4)
