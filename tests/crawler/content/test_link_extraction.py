"""The link-extraction policy (crawl_assets/crawler/content/link_sources.py) against the
conformance file tests/data/links/link_extraction.json: HTML snippets with the pages,
rel=nofollow links and resources we expect from each, and what Heritrix's ExtractorHTML does
with them. No network."""

import json
import re
from pathlib import Path

import pytest

from crawl_assets.crawler.content.link_sources import (
    PAGE_ATTRIBUTES, PAGE_RELS, RESOURCE_ATTRIBUTES, RESOURCE_RELS, refresh_target, srcset_urls,
)
from crawl_assets.crawler.content.links import scan_page

CONFORMANCE = json.loads((Path(__file__).parents[2] / "data" / "links" / "link_extraction.json")
                         .read_text(encoding="utf-8"))
CASES = CONFORMANCE["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_every_snippet_gives_the_links_the_conformance_file_expects(case):
    scan = scan_page(case["html"], case["page"])
    assert scan.links == case["pages"]
    assert scan.nofollow_links == case["nofollow"]
    assert scan.resources == case["resources"]


def test_the_conformance_file_exercises_every_element_and_rel_the_policy_names():
    """Each element and <link> rel the policy reads appears in some snippet, and every case
    says how Heritrix treats it (so a new rule comes with a case, checked against Heritrix)."""
    markup = " ".join(case["html"] for case in CASES).lower()
    tags = set(re.findall(r"<([a-z]+)[\s>/]", markup))
    assert set(PAGE_ATTRIBUTES) | set(RESOURCE_ATTRIBUTES) | {"base", "meta", "noframes"} <= tags
    rels = {word for value in re.findall(r'<link rel="([^"]*)"', markup) for word in value.split()}
    assert PAGE_RELS | RESOURCE_RELS <= rels
    assert all(case["heritrix"] for case in CASES)
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("content, target", [
    ("0; url=/a.html", "/a.html"),
    ("  1.5 ;URL='b c.html' trailing", "b c.html"),
    ('2,url="d.html"', "d.html"),
    ("3 e.html", "e.html"),
    ("4;", None),
    ("5", None),
    ("url=/f.html", None),  # no delay: browsers do not refresh
    ("6x; url=/g.html", None),  # not a number
    (".5; url=h.html", "h.html"),
    ("", None),
    ("0; url='/i'j'", "/i"),  # a quoted URL ends at its first closing quote
    # only ASCII whitespace is skipped: a no-break space starts the URL, or ends it
    ("0;\u00a0url=/k.html", "\u00a0url=/k.html"),
    ("7 \u00a0; url=/l.html", "\u00a0; url=/l.html"),
    ("8; url=/m.html\u00a0", "/m.html\u00a0"),
])
def test_meta_refresh_is_read_as_the_html_standard_says(content, target):
    assert refresh_target(content) == target


def test_srcset_candidates_keep_data_urls_whole():
    assert srcset_urls("a.png 1x,b.png 2x, data:image/png;base64,AA,BB 3x ,  c.png") == [
        "a.png", "b.png", "data:image/png;base64,AA,BB", "c.png"]
