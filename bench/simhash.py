"""SimHash benchmark: fingerprint speed on the demo web's pages and the near-duplicate
index join (crawl_assets.crawler.content.simhash) over 1M and 10M synthetic fingerprints.

    .venv/bin/python bench/simhash.py [--quick] [--sizes 1000000,10000000]
        [--planted 10000] [--far 2000] [--rounds 3]

Fingerprints: every page of DemoWeb(hosts=20, pages_per_host=50) (10-50 KB HTML), timed
as page_text + simhash64 (end to end; fingerprints_per_s), page_text alone, simhash64
alone on the extracted text (the compiled kernel when it was built) and simhash64_numpy
(the numpy reference) alone. Each is the best of --rounds passes over the 1000 pages, so a
busy neighbour on a shared machine moves the figure less.

Index: each size runs in a fresh subprocess (so its peak RSS, VmHWM, is its own):
uniformly random 64-bit fingerprints, of which --planted are replaced by near copies of
other fingerprints at distance 0..3 (evenly) and --far by copies at distance 4..6.
Timed: near_duplicate_pairs(ids, fps, threshold=3) (expand="all"). Recall = planted
pairs within distance 3 that were reported; every far pair must be absent. Goals:
1M under 10 s, 10M under 120 s. --quick runs 1M only (10M is then reported as nan).
The last line is machine-readable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOALS = {1_000_000: 10.0, 10_000_000: 120.0}


def _best_seconds(work, items, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for item in items:
            work(item)
        best = min(best, time.perf_counter() - t0)
    return best


def bench_fingerprints(rounds: int) -> tuple[float, float, float]:
    from crawl_assets.crawler.content.simhash import (compiled_fingerprint, page_text, simhash64,
                                              simhash64_numpy)
    from demoweb import DemoWeb

    web = DemoWeb(hosts=20, pages_per_host=50)
    pages = [web.render_page(h, p) for h in range(20) for p in range(50)]
    mean_kb = sum(map(len, pages)) / len(pages) / 1024
    texts = [page_text(html) for html in pages]      # also warms up (power tables)
    fps = [simhash64(text) for text in texts]
    end_to_end = _best_seconds(lambda html: simhash64(page_text(html)), pages, rounds)
    text_only = _best_seconds(page_text, pages, rounds)
    only = _best_seconds(simhash64, texts, rounds)
    reference = _best_seconds(simhash64_numpy, texts, rounds)
    n = len(pages)
    print(f"fingerprints: {n} demo-web pages, mean {mean_kb:.1f} KB HTML, "
          f"mean {sum(map(len, texts)) / n / 1024:.1f} KB text, {len(set(fps))} distinct; "
          f"best of {rounds} passes")
    print(f"  page_text + simhash64: {n / end_to_end:,.0f} pages/s "
          f"({end_to_end / n * 1e6:.0f} us/page)")
    print(f"  page_text only:        {n / text_only:,.0f} pages/s "
          f"({text_only / n * 1e6:.0f} us/page)")
    kernel = "compiled kernel" if compiled_fingerprint is not None else "numpy: kernel not built"
    print(f"  simhash64 only:        {n / only:,.0f} texts/s ({only / n * 1e6:.0f} us/text; "
          f"{kernel})")
    print(f"  simhash64_numpy only:  {n / reference:,.0f} texts/s "
          f"({reference / n * 1e6:.0f} us/text; the reference)")
    return n / end_to_end, n / only, mean_kb


def _index_child(size: int, planted: int, far: int) -> dict:
    import numpy as np

    from crawl_assets.crawler.content.simhash import near_duplicate_pairs

    rng = np.random.default_rng(size)
    fps = rng.integers(0, 2 ** 64, size, dtype=np.uint64)
    # Distinct positions: sources and targets never overlap.
    pos = rng.choice(size, 2 * (planted + far), replace=False)
    src, dst = pos[: planted + far], pos[planted + far:]
    dists = np.concatenate([np.arange(planted) % 4, 4 + np.arange(far) % 3])
    flips = np.zeros(planted + far, np.uint64)
    for i, d in enumerate(dists):
        for b in rng.choice(64, int(d), replace=False):
            flips[i] |= np.uint64(1) << np.uint64(b)
    fps[dst] = fps[src] ^ flips
    ids = np.arange(size, dtype=np.int64)
    t0 = time.perf_counter()
    pairs = near_duplicate_pairs(ids, fps, threshold=3)
    seconds = time.perf_counter() - t0
    found = np.unique(pairs.a * np.int64(size) + pairs.b)
    want = np.minimum(src, dst).astype(np.int64) * size + np.maximum(src, dst)
    hit = np.isin(want, found)
    recall = float(hit[:planted].mean()) if planted else 1.0
    far_reported = int(hit[planted:].sum())
    assert (pairs.distance <= 3).all()
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    return {"size": size, "seconds": seconds, "pairs": len(pairs), "recall": recall,
            "far_reported": far_reported, "peak_mb": hwm / 1024,
            "base_mb": fps.nbytes * 2 / 2 ** 20}


def bench_index(size: int, planted: int, far: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(size), "--planted",
                          str(planted), "--far", str(far)], capture_output=True, text=True,
                         cwd=str(ROOT))
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"index run for {size} failed")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    goal = GOALS.get(size)
    met = "met" if goal is not None and r["seconds"] < goal else "NOT met"
    print(f"index {size:,} fingerprints: {r['seconds']:.2f} s, peak RSS {r['peak_mb']:.0f} MB "
          f"(ids+fps {r['base_mb']:.0f} MB), {r['pairs']:,} pairs reported, "
          f"planted recall {r['recall'] * 100:.2f} % ({planted:,} at distance 0-3), "
          f"far pairs reported {r['far_reported']} of {far:,} (distance 4-6); "
          f"goal < {goal:.0f} s: {met}")
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--planted", type=int, default=10_000)
    ap.add_argument("--far", type=int, default=2_000)
    ap.add_argument("--rounds", type=int, default=3, help="passes over the pages; best counts")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(_index_child(args.child, args.planted, args.far)))
        return
    print(f"machine: {os.cpu_count()} cores")
    fps_s, only_s, _ = bench_fingerprints(args.rounds)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else [1_000_000] if args.quick else [1_000_000, 10_000_000])
    results = {s: bench_index(s, args.planted, args.far) for s in sizes}
    recall = min(r["recall"] for r in results.values())
    far_ok = all(r["far_reported"] == 0 for r in results.values())
    print(f"planted recall (distance <= 3): {recall * 100:.2f} %; far pairs never reported: "
          f"{far_ok}")

    def sec(n):
        return f"{results[n]['seconds']:.2f}" if n in results else "nan"

    print(f"simhash fingerprints_per_s={fps_s:.0f} index_1m_s={sec(1_000_000)} "
          f"index_10m_s={sec(10_000_000)} planted_recall={recall:.4f}")


if __name__ == "__main__":
    main()
