"""SimHash fingerprints and the permuted-blocks near-duplicate index."""

from __future__ import annotations

import random
import subprocess
import sys
from itertools import combinations

import numpy as np
import pytest

from crawl_assets.crawler.simhash import (
    Pairs, block_keys, block_layout, clusters, hamming, near_duplicate_pairs, page_text,
    simhash64, to_signed64, to_unsigned64,
)

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
    code = ("import sys; from crawl_assets.crawler.simhash import simhash64, page_text;"
            "print(simhash64(sys.stdin.read()))")
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                         text=True, check=True, env={"PYTHONHASHSEED": "12345",
                                                     "PATH": "/usr/bin:/bin"},
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert int(out.stdout) == here


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
    near, far = [], []
    for d in list(range(4)) * 50:
        base = fps[int(rng.integers(len(fps)))]
        fps.append(_flip(base, d, rng))
        near.append((base, fps[-1]))
    for d in [4, 5, 6] * 30:
        base = fps[int(rng.integers(3000))]
        fps.append(_flip(base, d, rng))
        far.append((base, fps[-1]))
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
    where = {int(f): int(i) for i, f in zip(ids, fps)}
    found = {(a, b) for a, b, _ in expected}
    for x, y in near:
        if hamming(x, y) <= threshold:
            assert (min(where[x], where[y]), max(where[x], where[y])) in found or x == y
    for x, y in far:
        assert (min(where[x], where[y]), max(where[x], where[y])) not in found
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
