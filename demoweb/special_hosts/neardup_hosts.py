"""Labelled near-duplicate pages for the demo web, opt-in.

    web = DemoWeb(hosts=20, near_duplicates=True)   # or: add_near_duplicate_hosts(DemoWeb(...))
    for g in web.near_duplicate_groups():          # NearDupGroup, in NEAR_DUP_KINDS order
        g.group_id, g.kind, g.urls, g.exact
    web.near_duplicate_homes()                     # home page URL of every near-dup host

Five hosts serve realistic news articles (1,500-3,000 words of main text from the shared
sentence pool, inside the usual header/nav/article/aside/footer template). Every page is in
exactly one labelled group: the URLs of a group carry the same article; different groups carry
different articles.

  kind             host(s)                               what differs between a group's URLs
  ad_rotation      articles.demo.test                    the ad block (<div class="ad">) text
  date_line        articles.demo.test                    the date line (<p class="dateline">),
                                                         and Last-Modified with it
  visitor_counter  articles.demo.test                    the visitor counter (<p class="counter">)
  boilerplate      syndication.demo.test                 site name, nav, sidebar and footer: one
                                                         "edition" template per URL
                                                         (/world/, /local/, ...)
  exact_mirror     www.mirror.demo.test, mirror.demo.test nothing: byte-identical payloads under
                                                         both hosts and two paths (/a/X.html,
                                                         /print/X.html; home: / and /index.html)
  distinct         template.demo.test                    the article: 20 different stories on one
                                                         template, one singleton group each (the
                                                         hard negatives)

Beside them tags.demo.test (tag_listing.py): tag pages in one template that lists those 20
stories, no group of its own. Their main text is mostly the template's, so they are
near-duplicates by SimHash; their lists differ, so they are not copies (dedup_step.py).

The varying parts (ad, date line, counter) sit outside the <article> element, so the text of
<article> is identical within a group; for ad_rotation / date_line / visitor_counter removing
that one element leaves byte-identical pages. Groups of kinds 1-5 have 3-5 URLs (GROUPS);
`exact` is True only for exact_mirror groups (singletons are not called exact).

All links are root-relative (so the mirror hosts are byte-identical) and every page is linked
from its host's home page; robots.txt allows everything; pages have ETag and Last-Modified
(the article's date, or the shown date for date_line) and answer conditional requests with 304.
A query string is ignored (the page without it is served); unknown paths are 404.
The pages do not depend on the port or the day; the same seed gives the same bytes. Nothing
is stateful (the visitor counter is a function of the URL), and rendered responses are kept
in a small per-seed LRU cache.
"""

from __future__ import annotations

import functools
import html
from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random
from typing import Mapping

from ..host_protocol import HostPlugin, bare_path, normalize_host, register_hosts
from ..ordinary.change_model import EPOCH
from ..page_shell import anchor as _a
from ..page_shell import esc as _esc
from ..page_shell import html_page, site_body
from ..prose import heading, sentence_pool, title_words
from ..randomness import between, stable_int
from ..responses import HTML_TYPE, Resource, Response, answer, make_resource, robots_allow_all
from ..words import NAME_WORDS
from .tag_listing import TagListing

NEAR_DUP_KINDS: tuple[str, ...] = ("ad_rotation", "date_line", "visitor_counter", "boilerplate",
                                   "exact_mirror", "distinct")

# host role -> hostname label (under web.domain)
HOST_LABELS: dict[str, str] = {
    "articles": "articles",
    "syndication": "syndication",
    "mirror_www": "www.mirror",
    "mirror": "mirror",
    "template": "template",
    "tags": "tags",  # tag_listing.py
}

# (group_id, kind, number of URLs). Sizes do not depend on the seed.
GROUPS: tuple[tuple[str, str, int], ...] = (
    ("ad-1", "ad_rotation", 4),
    ("ad-2", "ad_rotation", 5),
    ("date-1", "date_line", 3),
    ("date-2", "date_line", 4),
    ("counter-1", "visitor_counter", 5),
    ("counter-2", "visitor_counter", 3),
    ("boiler-1", "boilerplate", 4),
    ("boiler-2", "boilerplate", 5),
    ("mirror-1", "exact_mirror", 4),
    ("mirror-2", "exact_mirror", 4),
    ("mirror-home", "exact_mirror", 4),  # the mirrors' home pages: / and /index.html on both
) + tuple((f"distinct-{k:02d}", "distinct", 1) for k in range(1, 21))

ARTICLE_WORDS = (1_600, 2_900)  # main text words per article (inclusive range)
NEARDUP_CACHE_PAGES = 128

# Variant URL shapes on articles.demo.test (variant j uses the j-th).
_ARTICLE_PATHS = ("/news/{slug}.html", "/m/news/{slug}.html", "/amp/news/{slug}.html",
                  "/share/{slug}.html", "/news/{slug}/full.html")
_MIRROR_PATHS = ("/a/{slug}.html", "/print/{slug}.html")

# The boilerplate editions of syndication.demo.test: (path segment, site name, nav labels,
# sidebar title, footer line). Variant j of a boilerplate group is served in edition j.
_EDITIONS = (
    ("world", "The Daily Globe: World Edition", ("World", "Politics", "Business", "Science", "Opinion"),
     "Top stories worldwide", "Globe Media Group, 1 Harbour Street. Syndication enquiries welcome."),
    ("local", "Valley Courier", ("Town hall", "Schools", "Traffic", "Weather", "Obituaries", "Events"),
     "Around the valley", "Valley Courier is printed on recycled paper every weekday morning."),
    ("business", "Market Ledger", ("Markets", "Companies", "Economy", "Personal finance"),
     "Market movers", "Market Ledger data is delayed by at least fifteen minutes. Not investment advice."),
    ("tech", "Circuit Weekly", ("Gadgets", "Software", "Security", "Reviews", "Podcasts"),
     "Trending in tech", "Circuit Weekly may earn a commission from links on this page."),
    ("weekend", "Sunday Almanac", ("Travel", "Food", "Books", "Puzzles", "Letters", "Archive", "Shop"),
     "This weekend", "Sunday Almanac: slow news for slow mornings since 1952."),
)

_SITE_NAMES = {"articles": "Northgate Herald", "syndication": "Syndicated Stories",
               "mirror": "Open Press Archive", "template": "Lakeside Review"}
_NAVS = {"articles": ("News", "Local", "Sport", "Culture", "Opinion"),
         "mirror": ("Front page", "Archive", "About the archive"),
         "template": ("Stories", "Features", "Columns", "Photo essays")}
_FOOTERS = {"articles": "Northgate Herald Ltd. Registered in the demo web. Reader support: see the help page.",
            "mirror": "This archive is mirrored at two addresses; both serve the same files.",
            "template": "Lakeside Review is an independent magazine published by its readers."}
_BRANDS = ("Acme", "Northwind", "Globex", "Initech", "Umbrella", "Stark", "Hooli", "Vandelay",
           "Wonka", "Soylent", "Tyrell", "Cyberdyne")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Not calendar.month_name: that follows the process locale, and the bytes must not.
_MONTHS = ("", "January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


@dataclass(frozen=True)
class NearDupGroup:
    """URLs (with this web's port) carrying the same article; `exact`: byte-identical payloads."""

    group_id: str
    kind: str
    urls: tuple[str, ...]
    exact: bool


def neardup_hostname(role: str, domain: str = "demo.test") -> str:
    return f"{HOST_LABELS[role]}.{domain}"


def add_near_duplicate_hosts(web) -> dict[str, str]:
    """Register the near-duplicate hosts on `web` (in place); returns hostname -> role."""
    corpus = NearDupCorpus(web.domain)
    return register_hosts(web, HOST_LABELS, lambda _role, hostname: NearDupHandler(corpus, hostname))


def near_duplicate_corpus(web) -> "NearDupCorpus | None":
    """The corpus behind the near-duplicate hosts registered on `web`, None if there are none."""
    for handler in web.special_handlers().values():
        if isinstance(handler, NearDupHandler):
            return handler.corpus
    return None


def near_duplicate_groups(web) -> list["NearDupGroup"]:
    corpus = near_duplicate_corpus(web)
    return corpus.groups(web) if corpus is not None else []


def near_duplicate_homes(web) -> list[str]:
    corpus = near_duplicate_corpus(web)
    return corpus.homes(web) if corpus is not None else []


PLUGIN = HostPlugin(option="near_duplicates", summary_key="neardup",
                    help="add the labelled near-duplicate article hosts (ads, dates, mirrors, ...)",
                    install=add_near_duplicate_hosts, homes=near_duplicate_homes)


# ---- text -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Article:
    title: str
    slug: str
    html: str  # the whole <article>...</article> element
    published: datetime


def _long_date(moment: datetime, with_time: bool = False) -> str:
    text = f"{_WEEKDAYS[moment.weekday()]}, {moment.day} {_MONTHS[moment.month]} {moment.year}"
    return text + (f", {moment:%H:%M} UTC" if with_time else "")


def _article(seed: int, group_id: str) -> _Article:
    rng = Random(stable_int(seed, "neardup-article", group_id))
    title = title_words(rng, 3, 7)
    slug = group_id + "-" + "-".join(title.lower().split()[:3])
    author = " ".join(w.capitalize() for w in rng.sample(NAME_WORDS, 2))
    pool, _ = sentence_pool(seed)
    target = between(rng, *ARTICLE_WORDS)
    words = 0
    sentences: list[str] = []
    while words < target:
        sentence = pool[int(rng.random() * len(pool))]
        sentences.append(sentence)
        words += len(sentence.split())
    out = ["<article>", f"<h1>{_esc(title)}</h1>", f'<p class="byline">By {_esc(author)}</p>']
    i = section = 0
    while i < len(sentences):
        if section % 4 == 0:
            out.append(f'<h2 id="section-{section // 4 + 1}">{heading(rng)}</h2>')
        k = between(rng, 3, 8)
        out.append(f"<p>{' '.join(sentences[i:i + k])}</p>")
        i += k
        section += 1
    out.append("</article>")
    published = EPOCH + timedelta(days=between(rng, 10, 300), minutes=between(rng, 6 * 60, 20 * 60))
    return _Article(title, slug, "\n".join(out), published)


# ---- layout -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Variant:
    group_id: str
    kind: str
    index: int  # position in the group
    role: str  # host role
    path: str


class NearDupCorpus:
    """All near-duplicate hosts of one web: the layout (which path on which host shows which
    group's article) and the rendering. Shared by the per-host handlers."""

    def __init__(self, domain: str = "demo.test", cache_pages: int = NEARDUP_CACHE_PAGES):
        self.domain = domain
        self.hostnames = {role: neardup_hostname(role, domain) for role in HOST_LABELS}
        self._roles = {h: r for r, h in self.hostnames.items()}
        self._cache_pages = cache_pages
        self._layout = functools.lru_cache(maxsize=4)(self._build_layout)
        self._articles = functools.lru_cache(maxsize=64)(_article)
        self._cached = functools.lru_cache(maxsize=cache_pages)(self._build)
        self.tags = TagListing(self.hostnames["tags"], self.hostnames["template"], self._stories)

    def _stories(self, seed: int) -> list[tuple[str, str]]:
        """(path, title) of template.demo.test's stories, which the tag pages list."""
        return [(v.path, self._title_of(seed, v)) for v in self._host_pages(seed, "template")]

    def role(self, hostname: str) -> str | None:
        return self._roles.get(normalize_host(hostname))

    # (seed) -> (variants in GROUPS order, {(role, path): variant})
    def _build_layout(self, seed: int) -> tuple[tuple[_Variant, ...], dict[tuple[str, str], _Variant]]:
        variants: list[_Variant] = []
        for group_id, kind, size in GROUPS:
            if group_id == "mirror-home":
                places = [(role, p) for role in ("mirror_www", "mirror") for p in ("/", "/index.html")]
            else:
                slug = self._articles(seed, group_id).slug
                if kind in ("ad_rotation", "date_line", "visitor_counter"):
                    places = [("articles", _ARTICLE_PATHS[j].format(slug=slug)) for j in range(size)]
                elif kind == "boilerplate":
                    places = [("syndication", f"/{_EDITIONS[j][0]}/{slug}.html") for j in range(size)]
                elif kind == "exact_mirror":
                    places = [(role, p.format(slug=slug)) for role in ("mirror_www", "mirror")
                              for p in _MIRROR_PATHS]
                else:
                    places = [("template", f"/stories/{slug}.html")]
            assert len(places) == size, group_id
            variants += [_Variant(group_id, kind, j, role, path) for j, (role, path) in enumerate(places)]
        return tuple(variants), {(v.role, v.path): v for v in variants}

    def groups(self, web) -> list[NearDupGroup]:
        variants, _ = self._layout(web.seed)
        urls: dict[str, list[str]] = {}
        for v in variants:
            urls.setdefault(v.group_id, []).append(
                f"http://{self.hostnames[v.role]}:{web.port}{v.path}")
        return [NearDupGroup(gid, kind, tuple(urls[gid]), kind == "exact_mirror")
                for gid, kind, _ in GROUPS]

    def homes(self, web) -> list[str]:
        return [f"http://{self.hostnames[role]}:{web.port}/" for role in HOST_LABELS]

    # ---- rendering --------------------------------------------------------------------

    def _host_pages(self, seed: int, role: str) -> list[_Variant]:
        variants, _ = self._layout(seed)
        family = ("mirror_www", "mirror") if role in ("mirror_www", "mirror") else (role,)
        # mirror pages are listed once (the two hosts serve the same files)
        return [v for v in variants if v.role == family[0] and v.group_id != "mirror-home"]

    def _title_of(self, seed: int, v: _Variant) -> str:
        return self._articles(seed, v.group_id).title

    @staticmethod
    def _label(v: _Variant) -> str:
        if v.kind == "boilerplate":
            return f" ({_EDITIONS[v.index][0]} edition)"
        if v.kind in ("ad_rotation", "date_line", "visitor_counter"):
            return ("", " (mobile)", " (AMP)", " (shared link)", " (full story)")[v.index]
        if v.kind == "exact_mirror":
            return ("", " (print version)")[v.index % 2]
        return ""

    def _shell(self, *, site: str, title: str, nav: list[tuple[str, str]], main: list[str],
               aside_title: str, aside: list[str], footer: list[str], description: str = "") -> str:
        head = [f'<meta name="description" content="{html.escape(description)}">'] if description else []
        body = site_body(_esc(site), (_a(h, t) for h, t in nav), main, _esc(aside_title), aside, footer)
        return html_page(f"{_esc(title)} | {_esc(site)}", body, head=head)

    def _boilerplate(self, seed: int, role: str, edition: int | None) -> dict:
        """nav, aside and footer of a host (or of one syndication edition): fixed per host."""
        pages = self._host_pages(seed, role)
        if role == "syndication":
            seg, site, labels, aside_title, footer_line = _EDITIONS[edition or 0]
            rng = Random(stable_int(seed, "neardup-edition", seg))
            nav = [("/", "Home")] + [(f"/#{label.lower().replace(' ', '-')}", label) for label in labels]
            picks = rng.sample(pages, min(len(pages), 3 + (edition or 0) % 3))
            pool, _ = sentence_pool(seed)
            blurb = " ".join(rng.choices(pool, k=between(rng, 2, 4)))
            aside = ["<ul>", *(f"<li>{_a(v.path, heading(rng))}</li>" for v in picks), "</ul>",
                     f'<p class="blurb">{_esc(blurb)}</p>']
            footer = [f"<p>&copy; 2026 {_esc(site)}. {_esc(footer_line)}</p>",
                      f"<p>{_a('/', site + ' home')}</p>"]
            return {"site": site, "nav": nav, "aside_title": aside_title, "aside": aside, "footer": footer}
        family = "mirror" if role in ("mirror_www", "mirror") else role
        site = _SITE_NAMES[family]
        nav = [("/", "Home")] + [("/index.html" if family == "mirror" and i == 0 else
                                  f"/#{label.lower().replace(' ', '-')}", label)
                                 for i, label in enumerate(_NAVS[family])]
        aside = ["<ul>", *(f"<li>{_a(v.path, self._title_of(seed, v))}</li>" for v in pages[:6]), "</ul>"]
        footer = [f"<p>&copy; 2026 {_esc(site)}. {_esc(_FOOTERS[family])}</p>", f"<p>{_a('/', 'Home')}</p>"]
        return {"site": site, "nav": nav, "aside_title": "Most read", "aside": aside, "footer": footer}

    def _home(self, seed: int, role: str) -> str:
        pages = self._host_pages(seed, role)
        parts = self._boilerplate(seed, role, None)
        if role == "syndication":
            parts["site"] = _SITE_NAMES["syndication"]
        items = [f"<li>{_a(v.path, self._title_of(seed, v) + self._label(v))}</li>" for v in pages]
        main = ["<section>", f"<h1>{_esc(parts['site'])}</h1>",
                "<p>Latest stories, every one of them worth reading twice.</p>",
                '<ul class="stories">', *items, "</ul>", "</section>"]
        return self._shell(site=parts["site"], title="Home", nav=parts["nav"], main=main,
                           aside_title=parts["aside_title"], aside=parts["aside"], footer=parts["footer"])

    def _story(self, seed: int, v: _Variant) -> tuple[str, datetime]:
        art = self._articles(seed, v.group_id)
        parts = self._boilerplate(seed, v.role, v.index if v.kind == "boilerplate" else None)
        modified = art.published
        if v.kind == "date_line":
            rng = Random(stable_int(seed, "neardup-date", v.group_id, v.index))
            modified = art.published + timedelta(days=v.index * between(rng, 1, 9),
                                                 minutes=between(rng, 0, 600))
            iso = modified.strftime("%Y-%m-%dT%H:%M:%SZ")
            dateline = (f'<p class="dateline">Updated <time datetime="{iso}">'
                        f"{_long_date(modified, with_time=True)}</time></p>")
        else:
            dateline = (f'<p class="dateline">Published <time datetime="{art.published.date().isoformat()}">'
                        f"{_long_date(art.published)}</time></p>")
        main = [dateline]
        if v.kind == "ad_rotation":
            rng = Random(stable_int(seed, "neardup-ad", v.group_id, v.index))
            pool, _ = sentence_pool(seed)
            brand = rng.choice(_BRANDS) + " " + title_words(rng, 1, 2)
            copy = " ".join(rng.choices(pool, k=between(rng, 2, 3)))
            main.append(f'<div class="ad"><p class="ad-label">Advertisement</p>'
                        f"<p><strong>{_esc(brand)}</strong>: {_esc(copy)}</p></div>")
        main.append(art.html)
        if v.kind == "visitor_counter":
            count = 10_000 + stable_int(seed, "neardup-counter", v.group_id, v.index) % 9_990_000
            main.append(f'<p class="counter">You are visitor number <span>{count:,}</span> '
                        "to this story.</p>")
        page = self._shell(site=parts["site"], title=art.title, nav=parts["nav"], main=main,
                           aside_title=parts["aside_title"], aside=parts["aside"],
                           footer=parts["footer"], description=art.title + ", by the newsroom.")
        return page, modified

    def _build(self, seed: int, role: str, path: str) -> Resource | None:
        if path == "/robots.txt":
            return None
        _, where = self._layout(seed)
        lookup_role = "mirror" if role == "mirror_www" else role  # byte-identical mirrors
        v = where.get((lookup_role, path))
        if v is not None and v.group_id != "mirror-home":
            text, modified = self._story(seed, v)
        elif path == "/" or v is not None:
            text, modified = self._home(seed, role), EPOCH
        else:
            return None
        return make_resource(text.encode("utf-8"), HTML_TYPE, modified)

    def respond(self, web, hostname: str, path: str, headers: Mapping[str, str]) -> Response:
        path = bare_path(path) or "/"
        if path == "/robots.txt":
            return robots_allow_all(hostname)
        role = self.role(hostname)
        if role == "tags":
            return self.tags.respond(web, path, headers)
        resource = self._cached(web.seed, role, path) if role is not None else None
        return answer(resource, headers)


class NearDupHandler:
    """The HostHandler of one near-duplicate host: DemoWeb calls it with (web, path, headers)."""

    def __init__(self, corpus: NearDupCorpus, hostname: str):
        self.corpus = corpus
        self.hostname = normalize_host(hostname)

    def __repr__(self) -> str:
        return f"NearDupHandler({self.hostname!r})"

    def __call__(self, web, path: str, headers: Mapping[str, str]) -> Response:
        return self.corpus.respond(web, self.hostname, path, headers)
