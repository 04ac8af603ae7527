"""Whether a change to a page's work kept every output the same: demo-web answers, captured
once, recorded again by this checkout's AnswerRecorder with the WARC record IDs and dates
fixed, and a digest printed of each output.

    .venv/bin/python bench/same_outputs.py --capture answers.pickle [--answers 800]
    .venv/bin/python bench/same_outputs.py answers.pickle [--dump outputs.txt]

--capture crawls the demo web (every host plug-in but the hostile hosts, whose answers are
slow by design) in this process, as fetch_profile.py does, and keeps the first N answers
the engine recorded: the task, the answer (HopResult, its body as received) and the verdict.
Without it, the answers are recorded again, in their order, into a fresh WARC file: two
checkouts (PYTHONPATH) whose last lines are equal wrote the same fetch-log rows, links,
SimHash, change digests, script signals and WARC bytes (gzip members byte for byte). --dump
writes every output, one answer a line, to diff two checkouts where they differ.

Last line: `same_outputs answers= rows= links= simhash= change_digest= script_signals= warc=`
(the first 16 hex digits of each output's SHA-256).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXED_DATE = "2026-01-01T00:00:00Z"


def capture(path: Path, answers: int, hosts: int) -> int:
    sys.path.insert(0, str(ROOT / "bench"))
    import fetch_engine
    from crawl_assets.crawler.batches.batch import run_fetch_batch
    from crawl_assets.crawler.fetching import answer_records
    from crawl_assets.crawler.fetching.workbench import FetchTask
    from demoweb.process import DemoWebProcess
    from demoweb.special_hosts.plugins import PLUGIN_OPTIONS

    kept: list = []
    original = answer_records.AnswerRecorder.record

    def record(self, task, hop, verdict):
        if len(kept) < answers:
            kept.append((task, hop, verdict))
        return original(self, task, hop, verdict)

    answer_records.AnswerRecorder.record = record
    plugins = {option: option != "hostile" for option in PLUGIN_OPTIONS}
    with DemoWebProcess(seed=1, hosts=hosts, pages_per_host=10, **plugins) as server:
        seeds = [server.web.base_url(i) + "/" for i in range(hosts)] + server.web.plugin_homes()
        job = fetch_engine.ShardJob(0, 1, 32, 0.01, 26, server.port, seeds, "")
        settings = fetch_engine.engine_settings(job)
        warc_dir = Path(tempfile.mkdtemp(prefix="same-outputs-"))
        try:
            run_fetch_batch(settings, 0, [FetchTask.for_url(u) for u in seeds], warc_dir, "capture")
        finally:
            shutil.rmtree(warc_dir, ignore_errors=True)
    path.write_bytes(pickle.dumps(kept))
    pages = sum(1 for _, hop, _ in kept if hop.exchange is not None and hop.exchange.status == 200)
    print(f"kept {len(kept)} answers ({pages} of status 200) in {path}")
    return 0


def fix_ids_and_dates() -> None:
    """Record IDs from a counter, the warcinfo's date fixed: two runs write the same bytes."""
    from warcio.warcwriter import BaseWARCWriter

    from crawl_assets.crawler.archive import warc

    counter = itertools.count()
    warc._record_id = lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>"
    BaseWARCWriter._make_warc_id = staticmethod(warc._record_id)
    BaseWARCWriter._make_warc_date = staticmethod(lambda use_micros=False: FIXED_DATE)


def replay(path: Path, dump: Path | None) -> int:
    from crawl_assets.crawler.archive.warc import WarcFileWriter
    from crawl_assets.crawler.fetching.answer_records import AnswerRecorder
    from crawl_assets.crawler.url_policy.trap_defences import TrapDefences

    fix_ids_and_dates()
    kept = pickle.loads(path.read_bytes())
    outputs: dict[str, list[str]] = {k: [] for k in ("rows", "links", "simhash", "change_digest", "script_signals")}
    warc_dir = Path(tempfile.mkdtemp(prefix="same-outputs-"))
    try:
        with WarcFileWriter(warc_dir, "same", "same_outputs") as warc:
            recorder = AnswerRecorder(warc, 10 << 20, TrapDefences(), agent="recrawl")
            signals: list = []
            recorder.keep_pages = lambda host, facts_signals: signals.append(facts_signals) or False
            for task, hop, verdict in kept:
                signals.clear()
                record, found = recorder.record(task, hop, verdict)
                outputs["rows"].append(repr(record))
                outputs["links"].append(repr(tuple(found)))
                outputs["simhash"].append(str(record.simhash))
                outputs["change_digest"].append(str(record.change_digest))
                outputs["script_signals"].append(repr(signals))
        outputs["warc"] = [f.read_bytes().hex() for f in sorted(warc_dir.glob("*.warc.gz"))]
    finally:
        shutil.rmtree(warc_dir, ignore_errors=True)
    if dump is not None:
        dump.write_text("".join(f"{name} {i} {line}\n" for name, lines in outputs.items()
                                for i, line in enumerate(lines)))
    digests = {name: hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16] for name, lines in outputs.items()}
    print(f"same_outputs answers={len(kept)} " + " ".join(f"{name}={value}" for name, value in digests.items()))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("answers_file", type=Path, nargs="?", help="answers captured with --capture")
    parser.add_argument("--capture", type=Path, help="crawl the demo web and keep its answers in this file")
    parser.add_argument("--answers", type=int, default=800, help="answers kept by --capture")
    parser.add_argument("--hosts", type=int, default=64, help="ordinary demo hosts crawled by --capture")
    parser.add_argument("--dump", type=Path, help="write every output here, one answer a line")
    args = parser.parse_args()
    if args.capture:
        return capture(args.capture, args.answers, args.hosts)
    if args.answers_file is None or not args.answers_file.is_file():
        parser.error("give the answers file written by --capture (bench/same_outputs.py --capture FILE)")
    return replay(args.answers_file, args.dump)


if __name__ == "__main__":
    sys.exit(main())
