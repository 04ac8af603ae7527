"""SimHash fingerprints and the permuted-blocks near-duplicate index."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest

from crawl_assets.crawler.content.simhash import (
    Pairs, block_keys, block_layout, clusters, hamming, near_duplicate_pairs, page_text,
    simhash64, to_signed64, to_unsigned64,
)
from crawl_assets.crawler.settings import CrawlSettings

THRESHOLD = CrawlSettings().near_dup_threshold   # bits: at most this far = near duplicates

_VOCAB = ["".join(random.Random(i).choice("abcdefghijklmnopqrstuvwxyz")
                  for _ in range(random.Random(i + 99).randint(2, 9))) for i in range(800)]
_ADS = [
    "Buy the new SuperPhone today and save twenty percent on every accessory in store.",
    "Limited offer: subscribe to our weekly newsletter and win a free holiday to Spain.",
    "Try our premium plan for thirty days without paying anything at all, cancel anytime.",
]


def _article(seed: int, words: int = 2000) -> list[str]:
    rng = random.Random(seed)
    paras, n = [], 0
    while n < words:
        sents = []
        for _ in range(rng.randint(3, 6)):
            k = rng.randint(8, 20)
            n += k
            sents.append(" ".join(rng.choice(_VOCAB) for _ in range(k)).capitalize() + ".")
        paras.append(" ".join(sents))
    return paras


def _page(paras, date="2024-05-01", visitors=12345, ad=0, title="Local news") -> bytes:
    half = len(paras) // 2
    body = ("".join(f"<p>{p}</p>\n" for p in paras[:half])
            + f'<div class="advertisement">{_ADS[ad]}</div>\n'
            + "".join(f"<p>{p}</p>\n" for p in paras[half:]))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body><nav><a href="/">Home</a> <a href="/news">News</a> <a href="/contact">Contact</a></nav>
<header><h1>The Daily Example</h1><p>Updated {date}</p></header>
<main><article><h2>{title}</h2><p>Published {date}. You are visitor number {visitors}.</p>
{body}</article></main>
<footer><p>Copyright 2024 The Daily Example. Visitors today: {visitors}</p></footer>
</body></html>""".encode()


# ------------------------------------------------------------------ fingerprints

def test_page_text_extracts_main_content():
    text = page_text(_page(_article(1)))
    assert len(text.split()) > 1900
    assert "SuperPhone" not in text              # the ad container is boilerplate
    assert page_text(_page(_article(1)).decode()) == text
    # resiliparse keeps a "sponsored" block; the ad selectors take it out.
    sponsored = _page(_article(1)).replace(b'class="advertisement"', b'class="sponsored"')
    assert "SuperPhone" not in page_text(sponsored)
    assert page_text(sponsored) == text


def _random_document(rng: random.Random) -> str:
    """A page of nested blocks (lists, tables, asides, footers, hidden and ad blocks, ...)
    around an <article> or <main>, with text, entities and inline markup."""
    tags = ["p", "div", "section", "ul", "ol", "li", "table", "tr", "td", "aside", "footer",
            "header", "nav", "blockquote", "pre", "figure", "figcaption", "time", "h2", "b", "a"]
    attrs = ["", ' class="nav"', ' class="menu"', ' class="share"', ' class="comments"',
             ' class="sidebar"', ' class="wrapper"', ' class="byline"', ' class="ad"',
             ' id="ad-top"', ' hidden', ' aria-hidden="true"', ' style="display:none"']

    def words() -> str:
        return " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(0, 9))) + rng.choice(
            ["", ".", " &amp; ", "&nbsp;", " 2024"])

    def block(depth: int) -> str:
        if depth > 4 or rng.random() < 0.3:
            return words()
        tag = rng.choice(tags)
        inner = "".join(block(depth + 1) for _ in range(rng.randint(1, 4)))
        return f"<{tag}{rng.choice(attrs)}>{inner}</{tag}>" + ("\n" if rng.random() < 0.5 else "")

    main = rng.choice(["article", "main"])
    return (f"<!doctype html><html><head><title>{words()}</title></head><body>"
            f"{block(1)}<{main}>{''.join(block(1) for _ in range(rng.randint(1, 6)))}</{main}>"
            f"{block(1)}</body></html>")


def test_page_text_reads_the_article_as_a_page_of_its_own():
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from crawl_assets.crawler.content.simhash import AD_SELECTORS

    def reference(html: str) -> str:
        # The article serialised and parsed as a page by itself (the slower first version).
        tree = HTMLTree.parse(html)
        for node in tree.body.query_selector_all(AD_SELECTORS):
            node.decompose()
        main = tree.body.query_selector("article") or tree.body.query_selector("main")
        return extract_plain_text(main.html, main_content=True)

    rng = random.Random(5)
    documents = [_random_document(rng) for _ in range(300)]
    moved, reparsed = [page_text(d) for d in documents], [reference(d) for d in documents]
    assert sum(a == b for a, b in zip(moved, reparsed)) >= 295   # mostly the very same text
    # Always the same words (what MinHash reads: whitespace may differ around a <pre>) and
    # the same fingerprints.
    assert [a.split() for a in moved] == [b.split() for b in reparsed]
    assert [simhash64(a) for a in moved] == [simhash64(b) for b in reparsed]
    assert sum(bool(b) for b in reparsed) > 250                  # mostly non-empty text


def test_fingerprint_basics():
    assert simhash64("") == 0
    assert simhash64("   ,.;  ") == 0
    fp = simhash64("The quick brown fox jumps over the lazy dog")
    assert 0 <= fp < 2 ** 64 and fp != 0
    assert simhash64("the QUICK brown fox, jumps over the lazy dog!") == fp   # case, punctuation
    assert to_unsigned64(to_signed64(fp)) == fp
    assert -(2 ** 63) <= to_signed64(fp) < 2 ** 63
    assert to_signed64(2 ** 64 - 1) == -1
    assert hamming(fp, fp ^ 0b1011) == 3
    assert hamming(to_signed64(fp), fp) == 0


def test_fingerprint_is_stable_across_processes():
    text = page_text(_page(_article(7)))
    here = simhash64(text)
    code = ("import sys; from crawl_assets.crawler.content.simhash import simhash64, page_text;"
            "print(simhash64(sys.stdin.read()))")
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                         text=True, check=True, env={"PYTHONHASHSEED": "12345",
                                                     "PATH": "/usr/bin:/bin"},
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[3]))
    assert int(out.stdout) == here


# ---- a reference SimHash, written from the module's description -------------------------------
#
# Plain Python, one word and one shingle at a time, from the steps simhash.py's docstring and
# _word_hashes describe (not from its vectorised code or the C kernel): ASCII-lowercase the
# UTF-8 bytes; a word is a run of ASCII letters, digits, "_" and non-ASCII bytes; a word of
# digits only hashes to one constant, any other to splitmix64's finaliser of its polynomial
# hash (each byte + 1, base B, mod 2**64) xor its length << 56; a shingle of s words (fewer
# when the text has fewer) is h = h * M + next word's hash, finalised the same way; bit j of the
# fingerprint is set when more than half of the shingle occurrences have it.
_M64 = (1 << 64) - 1
_REF_BASE = 0x100000001B3             # the 64-bit FNV prime
_REF_SHINGLE_MULT = 0x9E3779B97F4A7C15  # 2**64 / the golden ratio
_REF_NUMBER = int.from_bytes(b"number!!", "big")
_REF_WORD = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")


def _splitmix64_final(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def reference_simhash(text: str, shingle: int = 3) -> int:
    words = _REF_WORD.findall(text.encode("utf-8").lower())
    hashes = []
    for word in words:
        if word.isdigit():  # (bytes.isdigit: ASCII digits only)
            hashes.append(_REF_NUMBER)
            continue
        h = 0
        for byte in word:
            h = (h * _REF_BASE + byte + 1) & _M64
        hashes.append(_splitmix64_final(h ^ ((len(word) << 56) & _M64)))
    if not hashes:
        return 0
    size = max(1, min(shingle, len(hashes)))
    shingles = []
    for i in range(len(hashes) - size + 1):
        h = hashes[i]
        for k in range(1, size):
            h = (h * _REF_SHINGLE_MULT + hashes[i + k]) & _M64
        shingles.append(_splitmix64_final(h))
    votes = [sum((h >> bit) & 1 for h in shingles) for bit in range(64)]
    return sum(1 << bit for bit, v in enumerate(votes) if 2 * v > len(shingles))


_RNG = random.Random(2024)
_LONG = " ".join("".join(_RNG.choice("abcdefghijklmnopqrstuvwxyz\u00e90123456789")
                         for _ in range(_RNG.randint(1, 12))) for _ in range(20000))
TEXTS = [
    "The quick brown fox jumps over the lazy dog",
    "Z\u00fcrich caf\u00e9: na\u00efve SM\u00d6RG\u00c5SBORD, jalape\u00f1o & cr\u00e8me "
    "br\u00fbl\u00e9e \u2014 \u4e2d\u6587\u6587\u672c test_case",
    "Updated 2024-05-01 at 10:45. Visitors today: 12,345; price 9.99 EUR",
    "one two",
    "x",
    _LONG,  # 150 KB: grows the hash's power tables
]


def _random_text(rng: random.Random) -> str:
    alphabet = "abcXYZ019_ -.,;:\n\t\u00e9\u00c9\u4e2d\u2014\U0001F600'\"&"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400)))


@pytest.mark.parametrize("shingle", [1, 2, 3, 5])
def test_fingerprints_equal_the_reference_simhash(shingle):
    from crawl_assets.crawler.content.simhash import simhash64_numpy

    rng = random.Random(shingle)
    for text in TEXTS + [_random_text(rng) for _ in range(300)]:
        expected = reference_simhash(text, shingle)
        assert simhash64(text, shingle) == simhash64_numpy(text, shingle) == expected, (text[:80], shingle)


def test_the_reference_reads_words_numbers_and_case_as_described():
    # Guards on the reference itself: ASCII case and punctuation do not count, every number is
    # the same word, a non-ASCII letter is part of a word (and keeps its case).
    assert reference_simhash("The quick, brown FOX!") == reference_simhash("the quick brown fox")
    assert reference_simhash("paid 12 of 345 today") == reference_simhash("paid 9 of 1 today")
    assert reference_simhash("caf\u00e9 au lait") != reference_simhash("caf au lait")
    assert reference_simhash("\u00c9t\u00e9 ici") != reference_simhash("\u00e9t\u00e9 ici")
    assert reference_simhash(" ,.; ") == 0


# Change detectors, not checks of correctness (the reference above is that): fingerprints of
# earlier days are stored in the fetch logs and compared with today's, so any change to
# tokenising, hashing, voting or text extraction that moves these values breaks that
# comparison and must be a deliberate, announced change. (The values were computed by the
# first implementation, before the speed-up.)
PINNED = [
    (TEXTS[0], 3, 0x2195F2053BB1E797),
    (TEXTS[0], 1, 0x67AC556780F3E541),
    (TEXTS[1], 3, 0x4A820D0B04E35284),
    (TEXTS[2], 3, 0x9C2D9CDD4E5A2977),
    (TEXTS[3], 5, 0x0E23273F17AC5063),       # fewer words than a shingle: one shingle
    (_LONG, 3, 0x4343D5421789AAF5),
]


@pytest.mark.parametrize("text, shingle, expected", PINNED, ids=range(len(PINNED)))
def test_fingerprints_are_pinned(text, shingle, expected):
    assert simhash64(text, shingle) == expected


def test_page_fingerprint_is_that_of_the_article_text():
    # Text extraction is part of the fingerprint: the page's text is its <article>'s blocks
    # (heading, byline, paragraphs), one blank line apart, without the ad, the navigation, the
    # header or the footer, and its fingerprint is the reference SimHash of that text.
    paras = _article(1)
    html = _page(paras)
    text = page_text(html)
    blocks = ["Local news", "Published 2024-05-01. You are visitor number 12345."] + paras
    assert text == "\n\n".join(blocks)
    assert simhash64(text) == reference_simhash(text)
    # A small edit of the article moves the fingerprint a little, another article far.
    edited = list(paras)
    edited[2] = edited[2].replace(edited[2].split()[3], "zzzword", 1)
    assert 0 < hamming(simhash64(text), simhash64(page_text(_page(edited)))) <= 6
    assert hamming(simhash64(text), simhash64(page_text(_page(_article(2))))) > 10
    # Change detectors (see PINNED): an upgrade of resiliparse or a rewrite that changes the
    # extracted text or its fingerprint shows here.
    assert len(text) == 13349
    assert simhash64(text) == 0x024CB5F4DF5D14D9


@pytest.mark.parametrize("seed", [11, 12, 13, 14, 15, 16])
def test_boilerplate_edits_stay_near_and_a_new_paragraph_moves_far(seed):
    paras = _article(seed, words=450)        # a short news page: 5 to 10 paragraphs
    assert 5 <= len(paras) <= 10
    base = simhash64(page_text(_page(paras, date="2024-05-01", visitors=12345)))
    # Only the date, the visitor counter (both inside the article, too) and the ad change.
    edits = [("2024-05-02", 12346, 0), ("2025-11-30", 7, 1), ("1999-01-01", 99999, 2)]
    for date, visitors, ad in edits:
        edited = _page(paras, date=date, visitors=visitors, ad=ad)
        assert hamming(base, simhash64(page_text(edited))) <= THRESHOLD
    # The same boilerplate, but one main paragraph rewritten: no longer a near duplicate.
    rewritten = list(paras)
    rewritten[2] = _article(seed + 1000, words=60)[0]
    far = simhash64(page_text(_page(rewritten, date="2024-05-01", visitors=12345)))
    assert hamming(base, far) > THRESHOLD


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_small_edits_are_near_and_other_pages_far(seed):
    paras = _article(seed)
    base = simhash64(page_text(_page(paras)))
    edits = [
        _page(paras, date="2024-06-13"),                       # changed date
        _page(paras, visitors=12399),                          # visitor counter
        _page(paras, ad=1),                                    # rotating ad
        _page(paras, date="2025-01-02", visitors=99, ad=2),    # all at once
    ]
    for html in edits:
        assert hamming(base, simhash64(page_text(html))) <= 3
    # One changed word in the article body is still near, though it changes three shingles
    # and so may flip a few more bits than boilerplate edits (which change none).
    changed = list(paras)
    changed[3] = changed[3].replace(changed[3].split()[4], "zzzword", 1)
    assert hamming(base, simhash64(page_text(_page(changed)))) <= 6
    # Genuinely different pages on the same template (and same vocabulary) are far.
    for other in (seed + 100, seed + 200):
        assert hamming(base, simhash64(page_text(_page(_article(other), title="Other")))) > 10


# ------------------------------------------------------------------------ index

def test_block_layout_and_keys():
    assert [s for _, s in block_layout(6)] == [11, 11, 11, 11, 10, 10]
    assert sum(s for _, s in block_layout(7)) == 64
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2 ** 64, 500, dtype=np.uint64)
    keys = block_keys(fps)
    assert keys.shape == (500, 20)
    # Any fingerprint within distance 3 shares a key with the original.
    for fp in fps[:50]:
        for d in range(4):
            bits = rng.choice(64, d, replace=False)
            other = int(fp) ^ sum(1 << int(b) for b in bits)
            k1 = block_keys(np.array([fp], np.uint64))[0]
            k2 = block_keys(np.array([other], np.uint64))[0]
            assert (k1 == k2).any()


def _flip(fp: int, d: int, rng) -> int:
    return fp ^ sum(1 << int(b) for b in rng.choice(64, d, replace=False))


def _brute(ids, fps, threshold):
    x = np.bitwise_count(fps[:, None] ^ fps[None, :])
    i, j = np.nonzero(np.triu(x <= threshold, 1))
    return {(min(ids[a], ids[b]), max(ids[a], ids[b]), int(x[a, b])) for a, b in zip(i, j)}


def _as_set(p: Pairs):
    return set(zip(p.a.tolist(), p.b.tolist(), p.distance.tolist()))


@pytest.mark.parametrize("threshold", [3, 2])
def test_index_matches_brute_force(threshold):
    rng = np.random.default_rng(42)
    fps = list(rng.integers(0, 2 ** 64, 3000, dtype=np.uint64).tolist())
    near, far = [], []                                  # (index of source, index of copy)
    for d in list(range(4)) * 50:
        src = int(rng.integers(len(fps)))
        fps.append(_flip(fps[src], d, rng))
        near.append((src, len(fps) - 1))
    for d in [4, 5, 6] * 30:
        src = int(rng.integers(3000))
        fps.append(_flip(fps[src], d, rng))
        far.append((src, len(fps) - 1))
    # Clustered fingerprints: 200 that agree on the top 40 bits (large key groups).
    top = int(rng.integers(0, 2 ** 64, dtype=np.uint64)) & ~((1 << 24) - 1)
    fps += [top | int(x) for x in rng.integers(0, 2 ** 24, 200)]
    fps = np.array(fps, dtype=np.uint64)
    ids = rng.permutation(np.arange(10, 10 + fps.size) * 3).astype(np.int64)  # unsorted ids
    got = near_duplicate_pairs(ids, fps, threshold=threshold)
    expected = _brute(ids, fps, threshold)
    assert _as_set(got) == expected
    assert len(got) == len(expected)                   # no duplicate pairs
    assert (got.a < got.b).all()
    # The planted pairs, checked against what the index reported (not the reference).
    reported = {(a, b) for a, b, _ in _as_set(got)}
    for i, j in near:
        pair = (int(min(ids[i], ids[j])), int(max(ids[i], ids[j])))
        assert (pair in reported) == (hamming(int(fps[i]), int(fps[j])) <= threshold)
    for i, j in far:
        assert (int(min(ids[i], ids[j])), int(max(ids[i], ids[j]))) not in reported
    table = got.to_arrow()
    assert table.column_names == ["a_id", "b_id", "distance"] and table.num_rows == len(got)


def test_signed_fingerprints_accepted():
    fps = np.array([2 ** 63 + 5, 2 ** 63 + 4, 0xFFFF], dtype=np.uint64)
    got = near_duplicate_pairs([1, 2, 3], fps.view(np.int64))
    assert _as_set(got) == {(1, 2, 1)}


def test_identical_fingerprints():
    rng = np.random.default_rng(3)
    fp = int(rng.integers(0, 2 ** 64, dtype=np.uint64))
    copies = 50_000
    fps = np.concatenate([np.full(copies, fp, np.uint64),
                          np.array([fp ^ 0b101, fp ^ (0b1111 << 30)], np.uint64),
                          rng.integers(0, 2 ** 64, 1000, dtype=np.uint64)])
    ids = np.arange(fps.size, dtype=np.int64)
    star = near_duplicate_pairs(ids, fps, expand="star")
    # copies-1 star edges to the smallest copy, plus one near pair (distance 2).
    assert len(star) == copies - 1 + 1
    assert set(star.a.tolist()) == {0}
    assert sorted(star.distance.tolist())[-1] == 2
    groups = clusters(star, ids)
    assert {groups[i] for i in range(copies + 1)} == {0}
    assert groups[copies + 1] == copies + 1                # distance 4: its own group
    small = near_duplicate_pairs(ids[:300], fps[:300])
    assert len(small) == 300 * 299 // 2 and set(small.distance.tolist()) == {0}
    # "all" with a few copies plus a near fingerprint: full cartesian expansion.
    f = np.array([fp, fp, fp, fp ^ 1, fp ^ 1, 7], np.uint64)
    got = near_duplicate_pairs(np.arange(6), f)
    assert _as_set(got) == _brute(np.arange(6), f, 3)


def test_clusters_are_transitive():
    pairs = [(5, 9, 1), (9, 2, 3), (20, 21, 0), (2, 7, 2)]
    groups = clusters(pairs, ids=[1, 2, 5, 7, 9, 20, 21, 30])
    assert {groups[i] for i in (2, 5, 7, 9)} == {2}
    assert groups[20] == groups[21] == 20
    assert groups[1] == 1 and groups[30] == 30
    prefer = {9: 0}
    g2 = clusters(pairs, prefer=lambda i: prefer.get(i, 1))
    assert g2[5] == g2[2] == g2[7] == 9
    # A chain found through the index (0-1-2-3 each 3 bits apart, ends 9 bits apart).
    fps = np.array([0, 0b111, 0b111111, 0b111111111], np.uint64)
    got = near_duplicate_pairs([10, 11, 12, 13], fps)
    assert _as_set(got) == {(10, 11, 3), (11, 12, 3), (12, 13, 3), (10, 12, 6)} - {(10, 12, 6)}
    assert set(clusters(got).values()) == {10}


def test_the_round_trip_check_is_the_risky_descendants_or_a_foreign_ancestor():
    # simhash.ROUND_TRIP_RISK, one selector, says what a query for the risky elements inside the
    # article and `closest("svg, math")` said: which articles take the long way (parsed again).
    from resiliparse.parse.html import HTMLTree

    from crawl_assets.crawler.content.simhash import ROUND_TRIP_RISK

    risky = "table, svg, math, noscript, template, iframe, noembed, noframes, xmp, plaintext"

    documents = [
        "<body><article><p>plain</p><div><p>nested</p></div></article>",
        "<body><article><p>a</p><table><tr><td>cell</td></tr></table></article>",
        "<body><ARTICLE><DIV><NOSCRIPT>x</NOSCRIPT></DIV></ARTICLE>",
        "<body><p>x</p><svg><article><p>in svg</p></article></svg>",
        "<body><math><mi><main><p>in math</p></main></mi></math>",
        "<body><svg><foreignObject><div><article><p>x</p></article></div></foreignObject></svg>",
        "<body><div><main><iframe src=a></iframe></main></div>",
        "<body><main><p>x</p><template><p>t</p></template></main>",
        "<body><table><tr><td><article><p>in a cell</p></article></td></tr></table>",
        "<body><article><p>x</p></article><svg></svg>",
    ]
    for html in documents:
        body = HTMLTree.parse(html).body
        main = body.query_selector("article") or body.query_selector("main")
        expected = main.query_selector(risky) is not None or main.closest("svg, math") is not None
        assert main.matches(ROUND_TRIP_RISK) == expected, html
    assert [HTMLTree.parse(d).body.query_selector("article, main").matches(ROUND_TRIP_RISK)
            for d in documents] == [False, True, True, True, True, True, True, True, False, False]


def test_a_page_without_an_article_is_read_by_boilerplate_removal():
    """No <article> nor <main>: the page's main text is what resiliparse's boilerplate removal
    keeps (its navigation and footer left out, as on every page of its site)."""
    story = ("Otters were seen again along the river this spring, after forty years away from its banks. " * 4,
             "Volunteers counted the animals at dawn over three weeks and found several families with young. " * 3)
    html = (f"<html><body><nav><a href=/a>Home</a> <a href=/b>About us</a> <a href=/c>Contact</a></nav>"
            f"<div class=content><h1>River otters return</h1><p>{story[0]}</p><p>{story[1]}</p></div>"
            "<footer>Copyright 2026 The River Trust. All rights reserved. Privacy policy.</footer></body></html>")
    assert page_text(html) == "\n\n".join(["River otters return", story[0].strip(), story[1].strip()])
