"""Signs that a page is built by its scripts, read from the plain fetch's markup (one pass over
the parsed tree, before its text is cut down for the SimHash):

- little text for the markup: the visible text (scripts, styles and <noscript> left out) is
  under LITTLE_TEXT_SHARE of the markup's bytes;
- a single empty mount element: the body's only element besides scripts, styles, templates and
  <noscript> is empty (`<div id="app"></div>`, `<div id="root"></div>`);
- a <noscript> that asks for JavaScript;
- links only in scripts: the markup links nowhere (no <a>, <area>, frame or <link> target)
  while it runs scripts.

A page shows the signals when at least SIGNALS_FOR_SAMPLE of them hold; the render tier's
"auto" mode (crawler/rendering/render_decision.py) renders a sample of such pages per host and
decides from what rendering adds whether the host needs the browser."""

from __future__ import annotations

from dataclasses import dataclass

from resiliparse.extract.html2text import extract_plain_text

from .html_tree import HTMLTree

LITTLE_TEXT_SHARE = 0.05  # visible text characters per byte of markup, below which text is "little"
SIGNALS_FOR_SAMPLE = 2  # signals a page must show to be worth rendering as a sample
NOT_CONTENT = frozenset({"script", "noscript", "style", "template", "link", "meta"})
ASKS_FOR_SCRIPTS = ("javascript", "enable js")


@dataclass(frozen=True)
class ScriptSignals:
    # Visible text, scripts and <noscript> left out: measured only when another signal holds
    # (little text alone is never enough, and measuring costs more than the rest); else None.
    text_chars: int | None
    markup_bytes: int
    empty_mount: bool
    noscript_asks: bool
    links_only_in_scripts: bool

    @property
    def little_text(self) -> bool:
        return self.text_chars is not None and self.text_chars < LITTLE_TEXT_SHARE * self.markup_bytes

    @property
    def count(self) -> int:
        return sum((self.little_text, self.empty_mount, self.noscript_asks, self.links_only_in_scripts))

    @property
    def needs_script(self) -> bool:
        return self.count >= SIGNALS_FOR_SAMPLE


def visible_text_chars(tree: HTMLTree) -> int:
    return len(extract_plain_text(tree, main_content=False, alt_texts=False, noscript=False,
                                  comments=False).strip())


def _empty_mount(tree: HTMLTree) -> bool:
    body = tree.body
    if body is None:
        return False
    mount = None
    node = body.first_element_child
    while node is not None:  # walked by hand, elements only: stops at the second content element
        if node.tag not in NOT_CONTENT:
            if mount is not None:
                return False
            mount = node
        node = node.next_element
    return mount is not None and mount.child_element_count == 0 and not mount.text.strip()


def _noscript_asks(tree: HTMLTree, noscript_texts: list[str] | None) -> bool:
    if noscript_texts is None:
        noscript_texts = [node.text for node in tree.document.get_elements_by_tag_name("noscript")]
    return any(word in text.lower() for text in noscript_texts for word in ASKS_FOR_SCRIPTS)


def script_signals(tree: HTMLTree, markup_bytes: int, link_count: int,
                   noscript_texts: list[str] | None = None) -> ScriptSignals:
    """The signals of a parsed page; link_count: the links its markup holds, noscript_texts:
    its <noscript> elements' texts, when the caller has them (links.scan_page reads both in
    its walk; without them the document is walked for the <noscript> elements)."""
    # (scripts looked for only on a page without links: most pages have links)
    only_in_scripts = link_count == 0 and bool(tree.document.get_elements_by_tag_name("script"))
    mount, asks = _empty_mount(tree), _noscript_asks(tree, noscript_texts)
    text = visible_text_chars(tree) if mount or asks or only_in_scripts else None
    return ScriptSignals(text, markup_bytes, mount, asks, only_in_scripts)
