"""Where a page's CPU goes: one shard of the demo web crawled in this process, as
fetch_engine.py's shard processes crawl it, with the CPU time (this thread's) of each step of
a page's work added up.

    .venv/bin/python bench/fetch_profile.py [--hosts 256] [--concurrency 128] [--base DIR]

--base DIR: import the crawler from another checkout (e.g. a `git worktree` of an older
commit), to compare two versions: run both at the same time, each against its own demo web
(the machine's load then weighs on both alike; one after the other, this machine's load moves
the figures by 10-20 %).

The steps are the functions named in STEPS, each timed where the page's work calls it (a
step inside another is counted in both: `examine` holds the content steps, `record` all of
the answer's work). What no step holds is the engine's: the HTTP exchange, the event loop,
admission of links, the workbench, the collector. The counters cost about 1 us a call.

Last line: `fetch_profile pages= cpu_ms_per_page= <step>_ms= ... engine_ms=` (ms a page).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

# (module, owner class or None, function, name printed)
STEPS = [
    ("crawl_assets.crawler.fetching.answer_records", "AnswerRecorder", "record", "record"),
    ("crawl_assets.crawler.fetching.answer_records", None, "examine", "examine"),
    ("crawl_assets.crawler.content.body", None, "parse_html", "parse_html"),
    ("crawl_assets.crawler.content.body", None, "scan_page", "scan_page"),
    ("crawl_assets.crawler.content.body", None, "script_signals", "script_signals"),
    ("crawl_assets.crawler.content.body", None, "page_text", "page_text"),
    ("crawl_assets.crawler.content.body", None, "simhash64", "simhash64"),
    ("crawl_assets.crawler.content.body", None, "change_digest", "change_digest"),
    ("crawl_assets.crawler.content.body", None, "listing_of", "listing_of"),
    ("crawl_assets.crawler.archive.warc", "WarcFileWriter", "write", "warc_write"),
    ("crawl_assets.crawler.fetching.answer_records", "AnswerRecorder", "_revisit_for", "payload_digest"),
    ("crawl_assets.crawler.fetching.admission", "Admission", "links_found", "links_found"),
]


def count_steps(spent: dict[str, float]) -> None:
    """Wrap each step so its thread CPU time adds up in spent[name]."""
    for module_name, owner_name, function, name in STEPS:
        module = importlib.import_module(module_name)
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, function)

        @functools.wraps(original)
        def counted(*args, _original=original, _name=name, **kwargs):
            started = time.thread_time()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.thread_time() - started

        setattr(owner, function, counted)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=256)
    parser.add_argument("--pages-per-host", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=128, help="hosts in flight")
    parser.add_argument("--base", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose crawler is measured (default: this one)")
    args = parser.parse_args()
    base = args.base.resolve()
    sys.path[:0] = [str(base / "bench"), str(base)]  # that checkout's fetch_engine.py and crawler
    import datasketch  # noqa: F401  (imported by the trap defences at the first link: not a page's cost)

    import fetch_engine
    from crawl_assets import __file__ as crawler_file
    from crawl_assets.crawler.batches.batch import run_fetch_batch
    from crawl_assets.crawler.fetching.workbench import FetchTask
    from crawl_assets.crawler.vocabulary import StatusClass
    from demoweb.process import DemoWebProcess

    spent: dict[str, float] = {}
    pass
    with DemoWebProcess(seed=1, hosts=args.hosts, pages_per_host=args.pages_per_host) as server:
        seeds = [server.web.base_url(i) + "/" for i in range(args.hosts)]
        job = fetch_engine.ShardJob(0, 1, args.concurrency, 0.01, args.pages_per_host + 16, server.port, seeds, "")
        settings = fetch_engine.engine_settings(job)
        warc_dir = Path(tempfile.mkdtemp(prefix="fetch-profile-"))
        try:
            before = resource.getrusage(resource.RUSAGE_SELF)
            result = run_fetch_batch(settings, 0, [FetchTask.for_url(u) for u in seeds], warc_dir, "profile")
            after = resource.getrusage(resource.RUSAGE_SELF)
        finally:
            shutil.rmtree(warc_dir, ignore_errors=True)
    pages = sum(r.status_class == StatusClass.OK for r in result.output.records)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    per_page = {name: 1000 * seconds / pages for name, seconds in spent.items()}
    per_page["engine"] = 1000 * cpu / pages - per_page.get("record", 0.0) - per_page.get("links_found", 0.0)
    print(f"{pages} pages, the crawler of {Path(crawler_file).parents[1]}, {1000 * cpu / pages:.3f} CPU ms a page "
          f"(system {1000 * (after.ru_stime - before.ru_stime) / pages:.3f}); steps, ms a page:")
    for name, ms in sorted(per_page.items(), key=lambda item: -item[1]):
        print(f"  {name:16s} {ms:.3f}")
    print(f"fetch_profile pages={pages} cpu_ms_per_page={1000 * cpu / pages:.3f} "
          + " ".join(f"{name}_ms={ms:.3f}" for name, ms in per_page.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
