"""Seen-URL set benchmark: the project's rbloom filter (crawl_assets.crawler.url_policy.url_bloom) against a
Python set of 16-byte URL hashes (Scrapy's approach). Run from anywhere with the venv:

    .venv/bin/python bench/seen_set.py [--urls 10000000] [--held-out 1000000]
        [--fp-rate 0.001] [--set-hash xxh3|sha1] [--quick]

The default run (10 million URLs) takes about 70 seconds on 2 cores and about 1 GB of
memory (the set); --quick (1 million URLs) about 10 seconds. --held-out 5000000 pins the
false-positive rate down to +-3 % (about 15 seconds more).

The URLs: made up, deterministically, from their index n (no randomness, no network):
canonical absolute URLs of 60-120 characters on about 100,000 hosts
(`https://www.h12345.example.co.uk/...`; a quarter of the URLs go to 2,000 popular hosts;
a host keeps one scheme and one TLD), in eight path shapes (blog posts with dates and slugs,
product pages with sorted query strings, news articles, wiki-style titles, search result pages,
user profiles, versioned docs, and `/path/segments/.../{n}.html?id=...`). Every URL carries
n in a delimited field, so URL n is different from URL m for n != m; the held-out URLs are
those with n in [urls, urls + held_out), so they were never inserted. The set run counts
its distinct digests, which checks that all URLs were different. URLs are generated lazily
in chunks of 10,000; neither run ever holds more than one chunk of URL strings.

Each structure is measured in its own fresh subprocess (this script re-run with --worker),
one after the other so they do not share the 2 cores, and each reports:
- build: inserting all URLs. Bloom: seen.build_filter(..., expected_items=urls, fp_rate)
  and then Bloom.update() chunk by chunk, which is what build_filter does with an iterable
  (so url_hash, the xxh3-128 of the UTF-8 URL, runs per URL). Set: set.update() with
  digest(url.encode()) per URL.
- lookups: `url in bloom` for all inserted URLs (every one must be found: a Bloom filter
  has no false negatives) and then for the held-out URLs (found = false positive).
  For the set, `digest(url.encode()) in s`, the way Scrapy's RFPDupeFilter.request_seen
  tests a fingerprint. lookups/s counts both kinds over the time of both.
  Only the structure's own work is timed; generating the URLs is timed separately, per
  pass, and shown as "URL generation (not included)".
- memory: VmRSS from /proc/self/status after the build (the last chunk dropped,
  gc.collect()) minus VmRSS before it, in a process that has imported everything first.
  Peak is VmHWM minus that same baseline (it includes the chunk of URLs being inserted, and
  for the set the old and new hash tables while it resizes).
- Bloom only: size_in_bits / 8, seen.save_filter / seen.load_filter time and file size
  (to a temporary directory, deleted afterwards), the loaded filter compared with the
  built one, and seen.measured_fp_rate() (the project's own check, 100,000 made-up
  `.invalid` URLs) next to the held-out rate.

The set holds xxhash.xxh3_128_digest(url) as 16-byte bytes by default (--set-hash sha1:
hashlib.sha1(url).digest()[:16]). Scrapy's RFPDupeFilter keeps a set of the 20-byte SHA1
request fingerprints as bytes; a 16- and a 20-byte bytes object take the same 64-byte
pymalloc block (sys.getsizeof 49 and 53), so the memory is Scrapy's too; the time is not
quite (Scrapy's fingerprint also canonicalises the URL and hashes method and body).

Goal: the Bloom filter under 25 MB at a 0.1 % false-positive rate for 10 million URLs.
Printed as MET when the filter built for 0.1 % (size_in_bits / 8, scaled linearly to 10
million from a smaller run) and, at full size, the RSS increase are under 25 MB, and the
measured rate on the held-out URLs is at most 0.0011 (0.1 % + 10 %): rbloom truncates k
to 9 and rounds the size up to 64-bit words, so a filter filled to expected_items runs at
about 0.00102 in theory (measured 0.00103 on 5 million held-out URLs), and 1 million
held-out URLs measure 0.001 only to +-6 % (95 %). The line also says whether the measured
rate is strictly above 0.001 (its whole 95 % interval).

The last line of output is machine-readable:
    seen_set urls=<n> bloom_bytes=<n> fp_rate=<x> set_bytes=<n> lookups_per_s=<n>
bloom_bytes = size_in_bits / 8; fp_rate = Bloom false positives on the held-out URLs;
set_bytes = RSS increase of the set run; lookups_per_s = Bloom lookups per second.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import xxhash

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_ROOT))

from crawl_assets.crawler.url_policy import url_bloom as seen  # noqa: E402

CHUNK = 10_000
GOAL_BYTES = 25_000_000
GOAL_URLS = 10_000_000
GOAL_FP = 0.001
GOAL_FP_TOLERANCE = 1.10  # a full filter may run this much over its nominal rate (see report)

# --- deterministic canonical URLs ------------------------------------------------------

_M64 = (1 << 64) - 1
_TLDS = (".com", ".org", ".net", ".de", ".co.uk", ".io", ".fr", ".info", ".nl", ".com.au")
_WORDS = (
    "about", "account", "archive", "article", "autumn", "banking", "battery", "bicycle",
    "business", "camera", "catalog", "climate", "coffee", "concert", "culture", "design",
    "economy", "education", "election", "energy", "fashion", "festival", "finance", "football",
    "garden", "gallery", "health", "history", "holiday", "housing", "industry", "insurance",
    "journal", "kitchen", "language", "library", "market", "medicine", "mountain", "museum",
    "network", "opinion", "outdoor", "politics", "printer", "recipes", "research", "review",
    "science", "security", "software", "shopping", "startup", "station", "support", "teacher",
    "technology", "theatre", "transport", "travel", "vacation", "weather", "weekend", "wildlife",
)
assert len(_WORDS) == 64 and all(w.isalpha() and w.islower() for w in _WORDS)
_TITLES = tuple(w.title() for w in _WORDS)
_COLORS = ("black", "blue", "green", "grey", "red", "silver", "white", "yellow")


def _url(n: int) -> str:
    x = (n * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _M64
    x ^= x >> 29
    x = (x * 0xBF58476D1CE4E5B9) & _M64
    x ^= x >> 32
    h = (x >> 3) % 100_000
    if (x >> 20) & 3 == 0:
        h %= 2_000  # a quarter of the URLs on 2,000 popular hosts
    origin = (
        f"{'http' if h % 4 == 0 else 'https'}://{'www.' if h % 3 == 0 else ''}"
        f"h{h}.example{_TLDS[h % 10]}"
    )
    w1 = _WORDS[(x >> 24) & 63]
    w2 = _WORDS[(x >> 30) & 63]
    w3 = _WORDS[(x >> 36) & 63]
    shape = x & 7
    if shape == 0:
        return f"{origin}/path/segments/{w1}/{n}.html?id={(x >> 42) & 0xFFFFF}"
    if shape == 1:
        return f"{origin}/blog/{2005 + (x >> 42) % 20}/{1 + (x >> 47) % 12:02d}/{w1}-{w2}-{w3}-{n}/"
    if shape == 2:
        return (
            f"{origin}/products/{w1}/{w2}/item-{n}"
            f"?color={_COLORS[(x >> 42) & 7]}&page={1 + (x >> 45) % 20}&sort=price"
        )
    if shape == 3:
        return f"{origin}/news/{w1}/{w2}/{n}-{w3}-{w1}.html"
    if shape == 4:
        return f"{origin}/encyclopedia/en/{_TITLES[(x >> 24) & 63]}_{w2}_({w3})_{n}"
    if shape == 5:
        return f"{origin}/catalog/search?category={w3}&page={1 + (x >> 42) % 50}&q={w1}+{w2}&start={n}"
    if shape == 6:
        return f"{origin}/community/users/{n}/{w1}/profile?tab={w2}"
    return f"{origin}/static/docs/v{(x >> 42) % 5}.{(x >> 45) % 20}/api/{w1}/{w2}/{n}.htm"


def url_chunks(start: int, stop: int) -> Iterator[list[str]]:
    """URLs start..stop-1, CHUNK at a time (one list alive at once)."""
    for lo in range(start, stop, CHUNK):
        yield list(map(_url, range(lo, min(lo + CHUNK, stop))))


# --- measuring -------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _timed_passes(start: int, stop: int, work) -> tuple[float, float, int]:
    """Run work(chunk) -> int over the URLs start..stop-1; (work s, generation s, sum)."""
    work_s = gen_s = 0.0
    total = 0
    t0 = time.perf_counter()
    for chunk in url_chunks(start, stop):
        t1 = time.perf_counter()
        total += work(chunk)
        t2 = time.perf_counter()
        gen_s += t1 - t0
        work_s += t2 - t1
        t0 = t2
    return work_s, gen_s, total


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    r = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - r), min(1.0, c + r)


def worker_bloom(urls: int, held_out: int, fp_rate: float) -> dict:
    gc.collect()
    rss0, hwm0 = _status_kb("VmRSS"), _status_kb("VmHWM")
    bloom = seen.build_filter((), urls, fp_rate)

    def insert(chunk: list[str]) -> int:
        bloom.update(chunk)
        return 0

    build_s, build_gen_s, _ = _timed_passes(0, urls, insert)
    gc.collect()
    rss1, hwm1 = _status_kb("VmRSS"), _status_kb("VmHWM")

    contains = bloom.__contains__
    hit_s, hit_gen_s, hits = _timed_passes(0, urls, lambda chunk: sum(map(contains, chunk)))
    miss_s, miss_gen_s, false_pos = _timed_passes(
        urls, urls + held_out, lambda chunk: sum(map(contains, chunk))
    )

    t = time.perf_counter()
    project_fp = seen.measured_fp_rate(bloom, 100_000)
    project_fp_s = time.perf_counter() - t

    with tempfile.TemporaryDirectory(prefix="seen_set_") as tmp:
        path = Path(tmp) / "seen.bloom"
        t = time.perf_counter()
        seen.save_filter(bloom, path)
        save_s = time.perf_counter() - t
        file_bytes = path.stat().st_size
        t = time.perf_counter()
        loaded = seen.load_filter(path)
        load_s = time.perf_counter() - t
        loaded_equal = loaded == bloom
        del loaded

    return {
        "kind": "bloom",
        "size_in_bits": bloom.size_in_bits,
        "approx_items": bloom.approx_items,
        "build_s": build_s,
        "build_gen_s": build_gen_s,
        "hit_s": hit_s,
        "hit_gen_s": hit_gen_s,
        "hits": hits,
        "miss_s": miss_s,
        "miss_gen_s": miss_gen_s,
        "false_pos": false_pos,
        "rss_delta": (rss1 - rss0) * 1024,
        "peak_delta": (max(hwm1, hwm0) - rss0) * 1024,
        "rss_after_kb": rss1,
        "project_fp": project_fp,
        "project_fp_s": project_fp_s,
        "save_s": save_s,
        "load_s": load_s,
        "file_bytes": file_bytes,
        "loaded_equal": loaded_equal,
    }


def worker_set(urls: int, held_out: int, set_hash: str) -> dict:
    if set_hash == "xxh3":
        digest = xxhash.xxh3_128_digest
    else:

        def digest(data: bytes, _sha1=hashlib.sha1) -> bytes:
            return _sha1(data).digest()[:16]

    encode = str.encode
    gc.collect()
    rss0, hwm0 = _status_kb("VmRSS"), _status_kb("VmHWM")
    fps: set[bytes] = set()

    def insert(chunk: list[str]) -> int:
        fps.update(map(digest, map(encode, chunk)))
        return 0

    build_s, build_gen_s, _ = _timed_passes(0, urls, insert)
    gc.collect()
    rss1, hwm1 = _status_kb("VmRSS"), _status_kb("VmHWM")

    contains = fps.__contains__

    def lookup(chunk: list[str]) -> int:
        return sum(map(contains, map(digest, map(encode, chunk))))

    hit_s, hit_gen_s, hits = _timed_passes(0, urls, lookup)
    miss_s, miss_gen_s, false_pos = _timed_passes(urls, urls + held_out, lookup)

    return {
        "kind": "set",
        "distinct": len(fps),
        "digest_len": len(digest(b"x")),
        "table_bytes": sys.getsizeof(fps),
        "object_bytes": sys.getsizeof(digest(b"x")),
        "build_s": build_s,
        "build_gen_s": build_gen_s,
        "hit_s": hit_s,
        "hit_gen_s": hit_gen_s,
        "hits": hits,
        "miss_s": miss_s,
        "miss_gen_s": miss_gen_s,
        "false_pos": false_pos,
        "rss_delta": (rss1 - rss0) * 1024,
        "peak_delta": (max(hwm1, hwm0) - rss0) * 1024,
        "rss_after_kb": rss1,
    }


def run_worker(kind: str, args: argparse.Namespace) -> tuple[dict, float]:
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--worker", kind,
        "--urls", str(args.urls), "--held-out", str(args.held_out),
        "--fp-rate", repr(args.fp_rate), "--set-hash", args.set_hash,
    ]
    t = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    wall = time.perf_counter() - t
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


# --- report ----------------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def _rate(n: int, s: float) -> str:
    return f"{n / s:,.0f}/s" if s > 0 else "-"


def _sample_lengths(urls: int) -> tuple[int, float, int]:
    step = max(1, urls // 100_000)
    lengths = [len(_url(n)) for n in range(0, urls, step)]
    return min(lengths), sum(lengths) / len(lengths), max(lengths)


def report(args: argparse.Namespace, b: dict, bwall: float, s: dict, swall: float, t0: float) -> None:
    n, h = args.urls, args.held_out
    bloom_bytes = b["size_in_bits"] // 8
    fp = b["false_pos"] / h if h else 0.0
    lo, hi = _wilson(b["false_pos"], h)
    b_lookups = n + h
    b_lookup_s = b["hit_s"] + b["miss_s"]
    s_lookup_s = s["hit_s"] + s["miss_s"]
    lookups_per_s = round(b_lookups / b_lookup_s) if b_lookup_s > 0 else 0
    lmin, lmean, lmax = _sample_lengths(n)
    # rbloom 1.5 (src/lib.rs): bits = -n ln(p) / ln(2)^2 rounded up to whole 64-bit words,
    # k = int(bits / n * ln 2) (truncated: 9 for p = 0.001), indexes from an LCG seeded with
    # the 128-bit hash. The textbook rate for that m and k, with n items in:
    theory_bits = -n * math.log(args.fp_rate) / math.log(2) ** 2
    k = int(theory_bits / n * math.log(2))
    theory_fp = (1 - math.exp(-k * n / b["size_in_bits"])) ** k

    print(f"seen-URL set benchmark: {n:,} inserted URLs, {h:,} held-out URLs, target fp {args.fp_rate}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; URLs {lmin}-{lmax} chars "
          f"(mean {lmean:.0f}, sample of {min(n, 100_000):,}); 100,000 hosts, a quarter of the URLs "
          f"on 2,000 of them; e.g.")
    for i in (0, 1, 2, 5, 12, 23):
        print(f"    {_url(i)}")
    print()
    set_label = f"set[{s['digest_len']}-byte {args.set_hash}]"
    block = -(-s["object_bytes"] // 16) * 16  # pymalloc block of a bytes object (16-aligned)
    set_est = s["table_bytes"] + s["distinct"] * block
    rows = [
        ("", "Bloom (rbloom, url_bloom.py)", set_label),
        ("build (insert all)", f"{b['build_s']:.2f} s  ({_rate(n, b['build_s'])})",
         f"{s['build_s']:.2f} s  ({_rate(n, s['build_s'])})"),
        ("lookups, inserted", f"{b['hit_s']:.2f} s  ({_rate(n, b['hit_s'])})",
         f"{s['hit_s']:.2f} s  ({_rate(n, s['hit_s'])})"),
        ("lookups, held-out", f"{b['miss_s']:.2f} s  ({_rate(h, b['miss_s'])})",
         f"{s['miss_s']:.2f} s  ({_rate(h, s['miss_s'])})"),
        ("lookups/s, both", _rate(b_lookups, b_lookup_s), _rate(n + h, s_lookup_s)),
        ("inserted found", f"{b['hits']:,} / {n:,}", f"{s['hits']:,} / {n:,}"),
        ("false positives", f"{b['false_pos']:,} / {h:,} = {fp:.5f}",
         f"{s['false_pos']:,} / {h:,} = {s['false_pos'] / h if h else 0:.5f}"),
        ("  95% interval", f"{lo:.5f} - {hi:.5f}", "0 by construction"),
        ("structure size", f"{bloom_bytes:,} B = {_mb(bloom_bytes)} ({b['size_in_bits'] / n:.2f} bits/URL)",
         f"{_mb(set_est)} = table {_mb(s['table_bytes'])} + {s['distinct']:,} x {block} B"),
        ("RSS increase (build)", f"{b['rss_delta']:,} B = {_mb(b['rss_delta'])}",
         f"{s['rss_delta']:,} B = {_mb(s['rss_delta'])} ({s['rss_delta'] / n:.1f} B/URL)"),
        ("peak RSS increase", _mb(b["peak_delta"]), _mb(s["peak_delta"])),
        ("saved file", f"{b['file_bytes']:,} B = {_mb(b['file_bytes'])}", "-"),
        ("save / load", f"{b['save_s'] * 1e3:.0f} ms / {b['load_s'] * 1e3:.0f} ms"
         f" ({'equal' if b['loaded_equal'] else 'DIFFERENT'})", "-"),
        ("URL gen. (not incl.)", f"{b['build_gen_s'] + b['hit_gen_s'] + b['miss_gen_s']:.1f} s",
         f"{s['build_gen_s'] + s['hit_gen_s'] + s['miss_gen_s']:.1f} s"),
        ("worker wall time", f"{bwall:.1f} s", f"{swall:.1f} s"),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for label, bv, sv in rows:
        print(f"{label:<{w0}}  {bv:<{w1}}  {sv}")
        if not label:
            print("-" * (w0 + w1 + 4 + max(len(r[2]) for r in rows)))
    print()
    print(f"Bloom: approx_items {b['approx_items']:,.0f}; {args.fp_rate} needs "
          f"{theory_bits / n:.2f} bits/URL ({_mb(theory_bits / 8)}); rbloom uses k = {k} hashes, "
          f"whose textbook rate at m = {b['size_in_bits']:,} bits, n = {n:,} is {theory_fp:.5f}; "
          f"seen.measured_fp_rate(100k .invalid URLs) = {b['project_fp']:.5f} "
          f"({b['project_fp_s']:.2f} s)")
    print(f"set: {s['distinct']:,} distinct digests of {n:,} URLs "
          f"({'all URLs distinct' if s['distinct'] == n else 'DUPLICATES'}); "
          f"set / Bloom memory = {s['rss_delta'] / max(b['rss_delta'], 1):.0f}x (RSS), "
          f"{s['rss_delta'] / bloom_bytes:.0f}x (vs filter bytes)")
    # Met: the filter for 10 million URLs (scaled linearly from a smaller run) under 25 MB,
    # at full size the RSS increase too, built for 0.1 %, and the measured rate at most 10 %
    # over 0.1 %: filled to expected_items, rbloom's integer k and rounded size give about
    # 0.00102 in theory, and 1M held-out URLs measure a rate of 0.001 to +-6 % (95 %).
    # Whether the rate is strictly above 0.001 (its whole 95 % interval) is printed as well.
    scale = GOAL_URLS / n
    size_ok = bloom_bytes * scale < GOAL_BYTES and (n < GOAL_URLS or b["rss_delta"] < GOAL_BYTES)
    fp_ok = fp <= GOAL_FP * GOAL_FP_TOLERANCE
    strict = "below" if hi <= GOAL_FP else "above" if lo > GOAL_FP else "not distinguishable from"
    met = size_ok and fp_ok and args.fp_rate <= GOAL_FP
    scaled = f" (scaled from {n:,} URLs)" if n != GOAL_URLS else ""
    print(f"goal: < 25 MB at 0.1 % for 10 million URLs: {'MET' if met else 'NOT MET'} - "
          f"filter {_mb(bloom_bytes * scale)}{scaled}, RSS increase {_mb(b['rss_delta'])} "
          f"at {n:,}; fp {fp:.5f} {'<=' if fp_ok else '>'} {GOAL_FP * GOAL_FP_TOLERANCE:.5f} "
          f"(0.1 % + 10 %); strictly, with its 95% interval {lo:.5f}-{hi:.5f}, {strict} 0.001")
    print(f"total wall time {time.perf_counter() - t0:.1f} s")
    print(f"seen_set urls={n} bloom_bytes={bloom_bytes} fp_rate={fp:.5f} "
          f"set_bytes={s['rss_delta']} lookups_per_s={lookups_per_s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--held-out", type=int, default=1_000_000)
    parser.add_argument("--fp-rate", type=float, default=seen.DEFAULT_FP_RATE)
    parser.add_argument("--set-hash", choices=("xxh3", "sha1"), default="xxh3")
    parser.add_argument("--quick", action="store_true", help="1,000,000 URLs")
    parser.add_argument("--worker", choices=("bloom", "set"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.urls = 1_000_000
    if args.worker == "bloom":
        print(json.dumps(worker_bloom(args.urls, args.held_out, args.fp_rate)))
        return
    if args.worker == "set":
        print(json.dumps(worker_set(args.urls, args.held_out, args.set_hash)))
        return
    t = time.perf_counter()
    b, bwall = run_worker("bloom", args)
    s, swall = run_worker("set", args)
    report(args, b, bwall, s, swall, t)


if __name__ == "__main__":
    main()
