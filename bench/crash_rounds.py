"""Kill a fetch batch again and again at random moments, then let it finish: what was lost?

    .venv/bin/python bench/crash_rounds.py [--rounds 20] [--hosts 32] [--seed 7]

A demo web (its own process, 127.0.0.1) and one fetch partition prepared as the tests do
(tests/crash/crash_support.py). First the partition is fetched uninterrupted in a copy, to
know its URLs and its length. Then the same partition is started in a subprocess
(tests/crash/fetch_runner.py) and SIGKILLed after a random time between 1.2 s (about the
runner's imports) and a third of that length, --rounds times or until a round runs to its
end; a last run completes it.
The result must hold what the uninterrupted run holds: the same URLs, one final row each,
every WARC file passing `warcio check`, every row's record where the row says, no ".open"
file left. Printed: kills, URLs, URLs lost, pages fetched more than once (in flight at a
kill, or done since the last checkpoint), the seconds the killed runs took in all against
the uninterrupted run. The last line:
    crash_rounds rounds=<kills> urls=<n> lost=<n> duplicate_rows=<n> fetched_twice=<n> invalid_warc_files=<n>
Exit status 1 when anything was lost or left invalid.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
TESTS = BENCH_DIR.parent / "tests"
sys.path[:0] = [str(BENCH_DIR.parent), str(TESTS), str(TESTS / "crash")]

from collections import Counter  # noqa: E402

import pyarrow.parquet as pq  # noqa: E402
from crash_support import DAY, final_state, kill_after, page_requests, prepared, run  # noqa: E402

from crawl_assets.storage.layout import fetch_log_file, warc_dir  # noqa: E402
from support import DemoWebProcess  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hosts", type=int, default=32)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="crash-rounds-"))
    with DemoWebProcess(hosts=args.hosts, pages_per_host=40) as server:
        config, shard, root = prepared(folder / "killed", server)
        baseline_config, _, baseline_root = prepared(folder / "baseline", server)
        began = time.monotonic()
        assert run(baseline_config, shard).returncode == 0
        length = time.monotonic() - began
        baseline = final_state(baseline_root, shard)

        started, began, kills = time.time(), time.monotonic(), 0
        for _ in range(args.rounds):
            if kill_after(config, shard, rng.uniform(1.2, max(1.5, length / 3))):
                break  # this round ran to the end
            kills += 1
        finished = run(config, shard)
        took = time.monotonic() - began
        rows = server.stop()
    folder = warc_dir(root, DAY, shard)
    log = pq.read_table(fetch_log_file(root, DAY, shard)).to_pylist()
    urls = Counter(row["url"] for row in log)
    duplicates = sum(n - 1 for n in urls.values())
    bad_files = [p for p in folder.glob("*.warc.gz") if subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", str(p)], capture_output=True).returncode]
    invalid = len(bad_files) + len(list(folder.rglob("*.open")))
    try:
        final_state(root, shard)  # and every row's record where the row says
    except AssertionError as exc:
        print(f"the partition is not whole: {exc}")
        invalid += 1
    lost = len(baseline["urls"] - set(urls))
    twice = sum(n - 1 for n in page_requests(rows, started).values() if n > 1)
    print(f"shard {shard}: {len(baseline['urls'])} URLs; uninterrupted {length:.1f} s; "
          f"{kills} kills and a last run {took:.1f} s in all (last run exit {finished.returncode})")
    print(f"crash_rounds rounds={kills} urls={len(urls)} lost={lost} duplicate_rows={duplicates} "
          f"fetched_twice={twice} invalid_warc_files={invalid}")
    return 1 if lost or invalid or duplicates or finished.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
