"""Pages' own signals about indexing and following: `<meta name="robots">`, the
`X-Robots-Tag` header, and rel="nofollow" on links. The policy, with Google's defaults
(developers.google.com/search/docs/crawling-indexing/robots-meta-tag and
.../qualify-outbound-links):

- Whose rules: `<meta name="robots">` and the X-Robots-Tag values that name no user agent
  are for every crawler; `<meta name="recrawl">` and `X-Robots-Tag: recrawl: ...` (our
  product token, settings.user_agent) are for us. Rules naming another crawler
  (`<meta name="googlebot">`, `X-Robots-Tag: bingbot: noindex`) are that crawler's and are
  not applied. Names and values are case-insensitive; directives from all the sources
  that apply add up (the most restrictive wins), as Google does.
- noindex (or none): the page is still fetched and archived (an archive keeps what was
  served) and its fetch-log row says noindex, so an index built on the crawl leaves it out.
- nofollow (or none): none of the page's links is followed. They are still reported in the
  links table, with dropped_reason page_nofollow, and not queued.
- rel="nofollow", "ugc" or "sponsored" on an <a> or <area>: that link is not followed
  (dropped_reason nofollow_link), unless the page also links the same URL without it.
  Google treats the three alike for crawling: hints that the link is not vouched for.
- index, follow, all are the defaults; other directives (noarchive, nosnippet, max-*,
  unavailable_after, ...) are not acted on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EVERY_CRAWLER = "robots"  # the <meta> name for all crawlers
NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
# X-Robots-Tag directives that carry a value after a colon, so "name:" is not a user agent.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


@dataclass(frozen=True)
class PageDirectives:
    noindex: bool = False
    nofollow: bool = False

    def __or__(self, other: PageDirectives) -> PageDirectives:
        return PageDirectives(self.noindex or other.noindex, self.nofollow or other.nofollow)


NO_DIRECTIVES = PageDirectives()


def directives_of(values: Iterable[str]) -> PageDirectives:
    """The noindex/nofollow of directive words (case-insensitive; none means both)."""
    noindex = nofollow = False
    for value in values:
        word = value.strip().lower()
        if word in ("noindex", "none"):
            noindex = True
        if word in ("nofollow", "none"):
            nofollow = True
    return PageDirectives(noindex, nofollow)


def meta_directives(metas: Iterable[tuple[str | None, str | None]], agent: str) -> PageDirectives:
    """Directives of a page's <meta name=... content=...> pairs that apply to `agent` (our
    product token, lower case): name="robots" or name=agent."""
    words: list[str] = []
    for name, content in metas:
        if name and content and name.strip().lower() in (EVERY_CRAWLER, agent):
            words += content.split(",")
    return directives_of(words) if words else NO_DIRECTIVES


def header_directives(values: Iterable[str], agent: str) -> PageDirectives:
    """Directives of X-Robots-Tag header values (one per header line) that apply to
    `agent`. In a value, "name: directive" switches to that user agent for the rest of the
    value ("googlebot: noindex, nofollow" is both for googlebot); a value starts out for
    every crawler."""
    words: list[str] = []
    for value in values:
        applies = True
        for token in value.split(","):
            name, colon, rest = token.partition(":")
            if colon and name.strip().lower() not in _VALUED:
                applies = name.strip().lower() == agent
                token = rest
            if applies:
                words.append(token)
    return directives_of(words) if words else NO_DIRECTIVES


def rel_nofollow(rel: str | None) -> bool:
    """Whether a link's rel attribute asks not to follow it."""
    return bool(rel) and not NOFOLLOW_RELS.isdisjoint(rel.lower().split())
