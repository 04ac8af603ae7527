"""Near-duplicate detection: 64-bit SimHash fingerprints and a permuted-blocks index.

Fingerprints (Charikar's SimHash over word shingles)
-----------------------------------------------------
`page_text(html)` extracts the main text of a page (resiliparse, main_content=True, so
navigation, footers and most template boilerplate are dropped). `simhash64(text)` then
lowercases the text, splits it into words (runs of ASCII letters/digits/underscore and
any non-ASCII bytes), forms shingles of `shingle` consecutive words and hashes every
shingle with a stable hash (polynomial hash of each word's UTF-8 bytes mod 2**64,
shingles combined multiplicatively, splitmix64 finaliser). The hash is computed by a
small compiled C kernel (simhash_kernel.c, one pass over the text, built by setup.py as
an optional extension); where it was not built, `simhash64_numpy` computes the same
values, vectorised (word hashes from prefix sums), and stays the reference the kernel
is tested against. The hash depends only on the text: no salt, no process state, identical
across processes, machines and runs. Every shingle *occurrence* votes +1/-1 on each of
the 64 bits (so shingles are weighted by their frequency); bit j of the fingerprint is 1
when more than half of the occurrences have bit j set. Empty text (no words) gives 0.

Storage: fingerprints are Python ints in 0 .. 2**64-1 and are stored UNSIGNED
(DuckDB UBIGINT, Parquet/Arrow uint64). `to_signed64`/`to_unsigned64` convert for
systems that only have signed 64-bit integers (BIGINT); the mapping is the two's
complement reinterpretation, so Hamming distances are unchanged.

Index (Manku, Jain, Das Sarma 2007, "Detecting near-duplicates for web crawling")
----------------------------------------------------------------------------------
To find all pairs within Hamming distance k without comparing all pairs, split the 64
bits into `blocks = k + 3` contiguous blocks (sizes as equal as possible, e.g. 11,11,11,
11,10,10 for k=3) and build one table per combination of `match = blocks - k` blocks
(C(6,3) = 20 tables for k=3). The key of a fingerprint in a table is the concatenation
of the bits of that table's blocks. Two fingerprints at distance <= k differ in at most
k blocks, so at least blocks - k = match blocks agree completely, and the table for
exactly those blocks (or any subset of them of size `match`) gives both the same key:
every pair within distance k shares at least one (table, key). With 33-bit keys, random
fingerprints rarely collide, so each table yields few candidates; each candidate is
verified with an exact popcount.

`near_duplicate_pairs` implements the join in numpy: per table the fingerprints are
bit-permuted so the key bits are the top bits, sorted (np.sort, no argsort), and pairs
are generated only inside runs of equal keys; distances are computed on the permuted
values (a bit permutation does not change Hamming distance) and the few surviving
values are mapped back to fingerprints. Identical fingerprints are collapsed first (each
distinct fingerprint enters the index once) and expanded to ids at the end, so 100,000
copies of one page cost nothing in the join. The numpy join was chosen over a DuckDB
self-join (unnest 20 keys per row, join, xor/bit_count): it needs no extra copy of the
data, streams one table at a time (peak memory ~ a few arrays of n uint64) and sorts
each table's keys with one np.sort (bench/README.md).

`clusters(pairs, ids)` turns pairs into groups with union-find (transitive closure);
the representative of a group is its smallest id, or the member with the smallest
`prefer(id)` key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from itertools import combinations
from typing import NamedTuple

import numpy as np
# Imported once, with the module: inside page_text these imports would run on every page.
from resiliparse.extract.html2text import extract_plain_text

from ..runtime import NUMPY_THREADS
from .html_tree import HTMLTree, parse_html

__all__ = [
    "page_text", "simhash64", "simhash64_numpy", "hamming", "to_signed64", "to_unsigned64", "block_layout",
    "block_keys", "Pairs", "near_duplicate_pairs", "clusters",
]

_U64 = np.uint64
_MASK64 = (1 << 64) - 1


# ---------------------------------------------------------------------------- text

def page_text(html: bytes | str | HTMLTree) -> str:
    """Main text of an HTML page: its <article> (or <main>) when it marks one, else what
    resiliparse's boilerplate removal keeps. Ads, dates and counters beside the article then
    leave the fingerprint alone. A tree passed in is used up: its ads are taken out and its
    body cut down to the article (content.examine scans its links first)."""
    tree = parse_html(html)
    body = tree.body
    if body is None:
        return extract_plain_text(tree, main_content=True)
    # Ad slots change on every view: they must not move the fingerprint.
    for node in body.query_selector_all(AD_SELECTORS).values():  # (iterating runs the query again)
        node.decompose()
    main = body.query_selector("article") or body.query_selector("main")
    if main is None:
        return extract_plain_text(tree, main_content=True)
    # The article is read as a page of its own: serialised and parsed again. Where markup
    # survives that round trip unchanged, moving the article into the emptied body gives
    # the same tree without the second parse; tables (foster-parented
    # content), raw-text and foreign elements may not survive it, so they take the long way.
    if main.matches(ROUND_TRIP_RISK):
        return extract_plain_text(main.html, main_content=True)
    body.replace_children(main)
    return extract_plain_text(tree, main_content=True)


AD_SELECTORS = ".ad, .ads, .advert, .advertisement, .sponsored, [id^='ad-'], [class^='ad-']"
_ROUND_TRIP_RISKS = ("table, svg, math, noscript, template, iframe, noembed, noframes, xmp, "
                     "plaintext")
# The article holds one of them, or stands inside an <svg> or <math>: one selector, so one
# parse of it and one walk (a query for the descendants and `closest` for the ancestors were two).
ROUND_TRIP_RISK = f":has({_ROUND_TRIP_RISKS}), :is(svg, math) *"


# ---------------------------------------------------------------------- fingerprint

# The same fingerprint as simhash64_numpy, in one pass in C (simhash_kernel.c, in a
# fraction of the numpy time: numpy's ~40 calls a page cost more than their work). setup.py
# builds it as an optional extension, so an install without a C compiler falls back here.
try:
    from .simhash_kernel import fingerprint as compiled_fingerprint
except ImportError:
    compiled_fingerprint = None

# bytes.translate table: 1 for a word byte (ASCII letter, digit, underscore, every
# non-ASCII UTF-8 byte), else 0.
_WORD_BYTES = bytes(b >= 0x80 or chr(b).isalnum() or b == 0x5F for b in range(256))
_DIGIT_0 = np.uint8(ord("0") + 1)             # digits in the shifted bytes (byte + 1)

_BASE = 0x100000001B3                         # odd, so invertible mod 2**64
_BASE_INV = pow(_BASE, -1, 1 << 64)
_SHINGLE_MULT = _U64(0x9E3779B97F4A7C15)
_NUMBER = _U64(0x6E756D6265722121)            # the hash of every all-digit word
_MIX_1 = _U64(0xBF58476D1CE4E5B9)
_MIX_2 = _U64(0x94D049BB133111EB)
# (BASE ** i, BASE_INV ** i) for i < len, grown on demand; one tuple, swapped whole, so a
# thread never sees one table grown and the other not.
_POWERS: tuple[np.ndarray, np.ndarray] = (np.ones(1, dtype=_U64), np.ones(1, dtype=_U64))


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    global _POWERS
    if _POWERS[0].size < n:
        size = max(n, 2 * _POWERS[0].size, 1 << 16)
        tables = []
        for base in (_BASE, _BASE_INV):
            p = np.full(size, base, dtype=_U64)
            p[0] = 1
            tables.append(np.cumprod(p, dtype=_U64))
        _POWERS = (tables[0], tables[1])
    return _POWERS


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, in place (vectorised, wraps mod 2**64)."""
    t = x >> _U64(30)
    x ^= t
    x *= _MIX_1
    np.right_shift(x, _U64(27), out=t)
    x ^= t
    x *= _MIX_2
    np.right_shift(x, _U64(31), out=t)
    x ^= t
    return x


def _word_hashes(text: str) -> np.ndarray:
    """Stable 64-bit hash of every lowercased word, in text order.

    Word [s, e) of bytes c hashes to mix((sum_i (c_i + 1) * B**(e-1-i)) ^ (e - s) << 56),
    computed for all words at once from one prefix sum of (c_i + 1) * B**-i."""
    # ASCII case folding on the UTF-8 bytes (bytes.lower() is cheaper than
    # str.lower() on mixed text); non-ASCII letters keep their case.
    low = text.encode("utf-8").lower()
    n = len(low)
    in_word = np.frombuffer(b"\0" + low.translate(_WORD_BYTES) + b"\0", dtype=bool)
    edges = np.flatnonzero(in_word[1:] != in_word[:-1])   # start, end, start, end, ...
    if edges.size == 0:
        return np.zeros(0, dtype=_U64)
    starts, ends = edges[0::2], edges[1::2]
    # byte + 1 cannot wrap: UTF-8 never contains the byte 0xFF.
    shifted = np.frombuffer(low, dtype=np.uint8) + np.uint8(1)
    pw, pw_inv = _powers(n + 1)
    prefix = np.empty(n + 1, dtype=_U64)
    prefix[0] = 0
    np.cumsum(shifted * pw_inv[:n], out=prefix[1:])
    at_edges = prefix[edges]
    h = at_edges[1::2] - at_edges[0::2]
    h *= pw[ends - 1]
    lengths = ends - starts
    h ^= lengths.astype(_U64) << _U64(56)
    _mix(h)
    # Numbers (words made only of digits) all hash alike: dates, counters, prices and
    # timestamps that change between fetches of one page do not change its shingles.
    # Only words that start with a digit can be numbers; check just their bytes.
    maybe = np.flatnonzero(shifted[starts] - _DIGIT_0 < 10)
    if maybe.size:
        sizes = lengths[maybe]
        not_digit = shifted[_ranges(starts[maybe], sizes)] - _DIGIT_0 >= 10
        offsets = np.zeros(maybe.size, dtype=np.int64)
        np.cumsum(sizes[:-1], out=offsets[1:])
        h[maybe[~np.logical_or.reduceat(not_digit, offsets)]] = _NUMBER
    return h


def _shingle_hashes(text: str, shingle: int) -> np.ndarray:
    w = _word_hashes(text)
    n = w.size
    if n == 0:
        return w
    s = max(1, min(int(shingle), n))
    m = n - s + 1
    h = w[:m].copy()
    for k in range(1, s):
        h *= _SHINGLE_MULT
        h += w[k: k + m]
    return _mix(h)


def _majority_bits(h: np.ndarray) -> int:
    """The 64-bit value whose bit j is set when more than half of `h` have bit j set."""
    n = h.size
    # bits[i, j] = bit j of h[i] (same as (h[:, None] >> arange(64)) & 1).
    bits = np.unpackbits(h.astype("<u8", copy=False).view(np.uint8),
                         bitorder="little").reshape(n, 64)
    # Sum the rows by folding the array in half with uint8 adds (seven folds keep every
    # count <= 128, no overflow), then add the rest and any odd rows left over in int64.
    votes = np.zeros(64, dtype=np.int64)
    rows = n
    for _ in range(7):
        if rows < 2:
            break
        half = rows // 2
        if rows % 2:
            votes += bits[rows - 1]
        bits = bits[:half] + bits[half: 2 * half]
        rows = half
    votes += bits[:rows].sum(axis=0, dtype=np.int64)
    return int(np.packbits(2 * votes > n, bitorder="little").view("<u8")[0])


def simhash64(text: str, shingle: int = 3) -> int:
    """64-bit SimHash (0 .. 2**64-1) of the text's word shingles; 0 for empty text.
    Every shingle occurrence votes once (frequency weighting). Computed by the compiled
    kernel when it was built, else by `simhash64_numpy`: the same value either way."""
    if compiled_fingerprint is not None:
        return compiled_fingerprint(text, int(shingle))
    return simhash64_numpy(text, shingle)


def simhash64_numpy(text: str, shingle: int = 3) -> int:
    """`simhash64` in numpy: the reference the compiled kernel is tested against, and the
    fallback where it was not built."""
    h = _shingle_hashes(text, shingle)
    if h.size == 0:
        return 0
    return _majority_bits(h)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints (signed or unsigned)."""
    return ((int(a) ^ int(b)) & _MASK64).bit_count()


def to_signed64(fp: int) -> int:
    """Unsigned 64-bit fingerprint -> the same bits as a signed BIGINT."""
    fp = int(fp) & _MASK64
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def to_unsigned64(fp: int) -> int:
    """Signed BIGINT -> the unsigned fingerprint (UBIGINT / uint64, the stored form)."""
    return int(fp) & _MASK64


# --------------------------------------------------------------------------- index

def block_layout(blocks: int) -> list[tuple[int, int]]:
    """(start bit, size) of each block, most significant first; sizes differ by <= 1."""
    if not 1 <= blocks <= 64:
        raise ValueError("blocks must be in 1..64")
    base, extra = divmod(64, blocks)
    sizes = [base + (1 if i < extra else 0) for i in range(blocks)]
    layout, top = [], 64
    for size in sizes:
        top -= size
        layout.append((top, size))
    return layout


def _tables(blocks: int, match: int) -> list[tuple[int, ...]]:
    if not 1 <= match <= blocks:
        raise ValueError("need 1 <= match <= blocks")
    return list(combinations(range(blocks), match))


def _permutation(layout, table) -> list[tuple[int, int, int]]:
    """(source start, size, destination start): the table's blocks go to the top bits."""
    order = list(table) + [b for b in range(len(layout)) if b not in table]
    moves, top = [], 64
    for b in order:
        start, size = layout[b]
        top -= size
        moves.append((start, size, top))
    return moves


def _apply(x: np.ndarray, moves, inverse: bool = False) -> np.ndarray:
    out = np.zeros_like(x)
    for src, size, dst in moves:
        if inverse:
            src, dst = dst, src
        mask = _U64((1 << size) - 1)
        out |= ((x >> _U64(src)) & mask) << _U64(dst)
    return out


def block_keys(fps: np.ndarray, blocks: int = 6, match: int = 3) -> np.ndarray:
    """Table keys, shape (len(fps), C(blocks, match)): column t is the key in table t,
    the concatenated bits of that table's blocks. Fingerprints within Hamming distance
    blocks - match share the same key in at least one column."""
    fps = np.asarray(fps, dtype=_U64)
    layout = block_layout(blocks)
    tables = _tables(blocks, match)
    out = np.empty((fps.size, len(tables)), dtype=_U64)
    for t, table in enumerate(tables):
        keybits = sum(layout[b][1] for b in table)
        out[:, t] = _apply(fps, _permutation(layout, table)) >> _U64(64 - keybits)
    return out


def _run_pairs(keys: np.ndarray):
    """Yield (i, j) index arrays of all pairs i < j with keys[i] == keys[j], for a
    sorted `keys`. Work is proportional to the number of pairs (plus one pass)."""
    m = keys.size
    if m < 2:
        return
    cand = np.flatnonzero(keys[1:] == keys[:-1])
    d = 1
    while cand.size:
        yield cand, cand + d
        d += 1
        cand = cand[cand + d < m]
        cand = cand[keys[cand + d] == keys[cand]]


class Pairs(NamedTuple):
    """Near-duplicate pairs: a < b (ids), distance = Hamming distance."""
    a: np.ndarray
    b: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:  # type: ignore[override]
        return int(self.a.size)

    def to_arrow(self):
        import pyarrow as pa
        return pa.table({"a_id": self.a, "b_id": self.b, "distance": self.distance})


def _table_pairs(uniq: np.ndarray, moves, keybits: int, threshold: int) -> np.ndarray:
    """Encoded (u*U + v) pairs of distinct-fingerprint indices found in one table."""
    p = np.sort(_apply(uniq, moves))
    keys = p >> _U64(64 - keybits)
    a_parts, b_parts = [], []
    # Only elements whose key repeats take part; compress first.
    rep = np.zeros(p.size, dtype=bool)
    same = keys[1:] == keys[:-1]
    rep[1:] |= same
    rep[:-1] |= same
    if rep.any():
        q, qk = p[rep], keys[rep]
        for i, j in _run_pairs(qk):
            ok = np.bitwise_count(q[i] ^ q[j]) <= threshold
            if ok.any():
                a_parts.append(q[i[ok]])
                b_parts.append(q[j[ok]])
    if not a_parts:
        return np.zeros(0, dtype=np.int64)
    a = np.searchsorted(uniq, _apply(np.concatenate(a_parts), moves, inverse=True))
    b = np.searchsorted(uniq, _apply(np.concatenate(b_parts), moves, inverse=True))
    lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    return lo * np.int64(uniq.size) + hi


def near_duplicate_pairs(ids, fps, threshold: int = 3, *, expand: str = "all",
                         workers: int = NUMPY_THREADS) -> Pairs:
    """All pairs of ids whose fingerprints are within `threshold` bits (no all-pairs scan).

    ids: integer ids (int64), fps: uint64 fingerprints (or signed BIGINT bits).
    expand="all": every pair (a, b), a < b, including exact duplicates (distance 0) --
    the exact answer; k copies of one fingerprint give k*(k-1)/2 pairs.
    expand="star": compact form for clustering: within a group of identical
    fingerprints each member is paired with the group's smallest id only, and near
    pairs between two groups are reported once, between their smallest ids. The
    connected components (see `clusters`) are the same as with "all".
    """
    if expand not in ("all", "star"):
        raise ValueError("expand must be 'all' or 'star'")
    ids = np.asarray(ids, dtype=np.int64)
    fps = np.asarray(fps)
    fps = fps.view(_U64) if fps.dtype == np.int64 else fps.astype(_U64, copy=False)
    if ids.shape != fps.shape or ids.ndim != 1:
        raise ValueError("ids and fps must be 1-d and of equal length")
    k = int(threshold)
    empty = Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
    if ids.size < 2 or k < 0:
        return empty

    # Group identical fingerprints; inside a group, members sorted by id.
    if np.all(ids[1:] >= ids[:-1]):
        order = np.argsort(fps, kind="stable")
    else:
        by_id = np.argsort(ids, kind="stable")
        order = by_id[np.argsort(fps[by_id], kind="stable")]
    sf = fps[order]
    sid = ids[order]
    del fps
    first = np.ones(sf.size, dtype=bool)
    first[1:] = sf[1:] != sf[:-1]
    gstart = np.flatnonzero(first)
    uniq = sf[gstart]
    del sf, first
    gcount = np.diff(np.append(gstart, sid.size))
    U = uniq.size

    blocks = min(64, k + 3)
    match = blocks - k if k < 61 else 1
    layout = block_layout(blocks)
    jobs = []
    for table in _tables(blocks, match):
        keybits = sum(layout[b][1] for b in table)
        jobs.append((_permutation(layout, table), keybits))
    if workers > 1 and U > 100_000:
        with ThreadPoolExecutor(workers) as pool:   # numpy sort releases the GIL
            found = list(pool.map(lambda j: _table_pairs(uniq, j[0], j[1], k), jobs))
    else:
        found = [_table_pairs(uniq, m, kb, k) for m, kb in jobs]
    enc = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    gu, gv = enc // U, enc % U
    gdist = np.bitwise_count(uniq[gu] ^ uniq[gv]).astype(np.uint8)

    a_parts, b_parts, d_parts = [], [], []
    # Exact duplicates (distance 0).
    dup = np.flatnonzero(gcount > 1)
    if dup.size:
        if expand == "star":
            a_parts.append(sid[np.repeat(gstart[dup], gcount[dup] - 1)])
            b_parts.append(sid[_ranges(gstart[dup] + 1, gcount[dup] - 1)])
        else:
            pos = _ranges(gstart[dup], gcount[dup])
            grp = np.repeat(np.arange(dup.size), gcount[dup])
            for i, j in _run_pairs(grp):
                a_parts.append(sid[pos[i]])
                b_parts.append(sid[pos[j]])
        d_parts.append(np.zeros(sum(x.size for x in b_parts), np.uint8))
    # Near pairs between distinct fingerprints.
    if gu.size:
        if expand == "star":
            a_parts.append(sid[gstart[gu]])
            b_parts.append(sid[gstart[gv]])
            d_parts.append(gdist)
        else:
            cu, cv = gcount[gu], gcount[gv]
            n_each = cu * cv
            pair = np.repeat(np.arange(gu.size), n_each)
            r = _ranges(np.zeros(gu.size, np.int64), n_each)   # 0..cu*cv-1 per pair
            a_parts.append(sid[gstart[gu][pair] + r // cv[pair]])
            b_parts.append(sid[gstart[gv][pair] + r % cv[pair]])
            d_parts.append(gdist[pair])
    if not a_parts:
        return empty
    a, b, d = np.concatenate(a_parts), np.concatenate(b_parts), np.concatenate(d_parts)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return Pairs(lo, hi, d)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) for each (s, c)."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
    return np.repeat(np.asarray(starts, dtype=np.int64), counts) + offsets


# ------------------------------------------------------------------------ clusters

def clusters(pairs, ids: Iterable | None = None,
             prefer: Callable[[int], object] | None = None) -> dict[int, int]:
    """Union-find over near-duplicate pairs: id -> representative of its group.

    `pairs`: a Pairs, or an iterable of (a, b) / (a, b, distance). `ids`: optional ids
    to include as singletons (they map to themselves). The representative is the
    member with the smallest `prefer(id)` (default: the smallest id)."""
    key = prefer if prefer is not None else (lambda x: x)
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    if isinstance(pairs, Pairs):
        edges = zip(pairs.a.tolist(), pairs.b.tolist())
    else:
        edges = ((p[0], p[1]) for p in pairs)
    for a, b in edges:
        a, b = int(a), int(b)
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = find(a), find(b)
        if ra == rb:
            continue
        if (key(rb), rb) < (key(ra), ra):
            ra, rb = rb, ra
        parent[rb] = ra
    out = {x: find(x) for x in parent}
    if ids is not None:
        for x in ids:
            x = int(x)
            out.setdefault(x, x)
    return out
