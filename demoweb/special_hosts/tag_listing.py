"""tags.demo.test: a host of tag pages in one template, distinct pages that look alike.

Registered with the near-duplicate hosts (neardup_hosts.add_near_duplicate_hosts), as their
hard negative beside template.demo.test. Like a blog's tag host: a home page listing the tags,
and TAG_COUNT tag pages `/tag/<name>.html`, each in the host's template: its <main> holds the
heading "Stories tagged <name>", the site's long description of how it tags stories (the same
TEMPLATE_WORDS words on every tag page) and the list of the stories tagged so, links to the
articles of template.demo.test (`//template.demo.test:<port>/stories/<slug>.html`, so a tag
page depends on the web's port). Every page's aside is the tag cloud (a link to each tag).

The main text is mostly the description, so the tag pages' SimHash fingerprints are within a
few bits of each other: a crawler that judges copies by the main text alone takes the host
for a copier (11 of its 13 pages near-duplicates). Their lists differ (no two tags share more
than a third of their stories): the pages are distinct. Pages have ETag and Last-Modified
(EPOCH) and answer conditional requests; a query string is ignored; unknown paths are 404.
"""

from __future__ import annotations

import functools
from random import Random
from typing import Mapping

from ..ordinary.change_model import EPOCH
from ..page_shell import anchor, esc, html_page, site_body
from ..prose import COMMON_WORDS, sentence_pool
from ..randomness import between, stable_int
from ..responses import HTML_TYPE, Resource, Response, answer, make_resource

TAG_COUNT = 12
TEMPLATE_WORDS = 500  # the description every tag page repeats (about)
STORIES_PER_TAG = (3, 5)
MAX_SHARED = 1 / 3  # two tags' lists: Jaccard similarity at most this
SITE = "Lakeside Review: stories by tag"


def tag_names(seed: int) -> list[str]:
    rng = Random(stable_int(seed, "tags"))
    return sorted(rng.sample([w for w in COMMON_WORDS if w.isalpha() and len(w) > 3], TAG_COUNT))


def tag_lists(seed: int, stories: int) -> dict[str, list[int]]:
    """Each tag's stories (indices into the template host's `stories`), no two tags alike."""
    lists: dict[str, list[int]] = {}
    for name in tag_names(seed):
        rng = Random(stable_int(seed, "tag-list", name))
        while True:
            picked = set(rng.sample(range(stories), between(rng, *STORIES_PER_TAG)))
            if all(len(picked & set(o)) / len(picked | set(o)) <= MAX_SHARED for o in lists.values()):
                break
        lists[name] = sorted(picked)
    return lists


class TagListing:
    """The pages of tags.demo.test; `stories(seed)` gives the template host's (path, title) list."""

    def __init__(self, hostname: str, template_host: str, stories):
        self.hostname, self.template_host, self.stories = hostname, template_host, stories
        self._cached = functools.lru_cache(maxsize=64)(self._build)

    def respond(self, web, path: str, headers: Mapping[str, str]) -> Response:
        return answer(self._cached(web.seed, web.port, path), headers)

    def _description(self, seed: int) -> str:
        pool, _ = sentence_pool(seed)
        rng = Random(stable_int(seed, "tag-description"))
        words, sentences = 0, []
        while words < TEMPLATE_WORDS:
            sentences.append(pool[int(rng.random() * len(pool))])
            words += len(sentences[-1].split())
        return " ".join(sentences)

    def _page(self, seed: int, title: str, main: list[str]) -> bytes:
        cloud = ["<ul>", *(f"<li>{anchor(f'/tag/{t}.html', t)}</li>" for t in tag_names(seed)), "</ul>"]
        body = site_body(esc(SITE), [anchor("/", "All tags")], main, "Tags", cloud,
                         [f"<p>&copy; 2026 {esc(SITE)}.</p>"])
        return html_page(f"{esc(title)} | {esc(SITE)}", body).encode("utf-8")

    def _build(self, seed: int, port: int, path: str) -> Resource | None:
        stories = self.stories(seed)
        lists = tag_lists(seed, len(stories))
        if path == "/":
            items = [f"<li>{anchor(f'/tag/{t}.html', t)} ({len(s)} stories)</li>" for t, s in lists.items()]
            page = self._page(seed, "Tags", [f"<h1>{esc(SITE)}</h1>", "<ul>", *items, "</ul>"])
        elif path.startswith("/tag/") and path.endswith(".html") and path[5:-5] in lists:
            name = path[5:-5]
            items = [f"<li>{anchor(f'//{self.template_host}:{port}{stories[i][0]}', stories[i][1])}</li>"
                     for i in lists[name]]
            main = [f"<h1>Stories tagged {esc(name)}</h1>", f"<p>{esc(self._description(seed))}</p>",
                    '<ul class="tagged">', *items, "</ul>"]
            page = self._page(seed, f"Stories tagged {name}", main)
        else:
            return None
        return make_resource(page, HTML_TYPE, EPOCH)
