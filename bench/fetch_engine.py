"""Fetch-engine benchmark: our crawler core against Scrapy on the demo web, at several
concurrency levels. Run from anywhere with the project's venv:

    .venv/bin/python bench/fetch_engine.py [--hosts 1024] [--pages-per-host 10]
        [--levels 64,256,1024] [--delay 0.01] [--processes N] [--set KEY=VALUE] [--quick]

The default run takes about 6-7 minutes on 2 cores, most of it Scrapy's; --quick (128
hosts, levels 16,64) about half a minute. --set overrides one of our engine's settings
(e.g. response_time_factor=0) for experiments; the default is the real job's settings.

What is crawled: the demo web (demoweb) in a subprocess on a free port of
127.0.0.1, restarted for every run so each crawler meets a fresh server and the same web:
--hosts hosts, each with a home page, --pages-per-host pages of 10-50 KB, a sitemap and a
robots.txt (some disallow /private/, some ask for Crawl-delay 0.1 or 0.25 s). Both crawlers
start from the home pages and follow links until every host is crawled completely, so the
expected page count is hosts * (pages_per_host + 2), plus for ours the feeds some hosts
link to (Scrapy's link extractor skips them).

Our engine runs the way the real fetch job does: one process per shard (spawned with
multiprocessing, --processes of them, default os.cpu_count()), shard_count = processes,
each running crawl_assets.crawler.batches.batch.run_fetch_batch for its shard with its hosts' home
pages as seeds and max_concurrent_hosts = L // processes, so L hosts are in flight in all,
as with Scrapy's CONCURRENT_REQUESTS = L. Robots.txt is obeyed (Crawl-delay included),
WARC files are written (to a temporary directory, deleted afterwards) and links extracted.

Scrapy runs as Scrapy runs: one process (bench/scrapy_peer.py), CONCURRENT_REQUESTS = L,
one request per host at a time, DOWNLOAD_DELAY = --delay without jitter, ROBOTSTXT_OBEY
(Scrapy ignores Crawl-delay), no AutoThrottle, no item pipelines, no WARC.

Measured per run:
- wall time: ours from the moment all shard processes are ready (imports done) until the
  last one has finished its batch and closed its WARC file; Scrapy from spider_opened to
  spider_closed;
- pages: ours records with status_class "ok", Scrapy responses with status 200 (robots.txt
  is not counted for either); pages/s = pages / wall time;
- CPU seconds per page: user + sys of the crawler processes over the same window (each
  process reads its own resource.getrusage(RUSAGE_SELF) at both ends; modules the engine
  imports lazily, datasketch for the trap defences, are imported before the window);
- peak RSS per process: VmHWM from /proc (ru_maxrss elsewhere; see measures.py);
- the demo web server's CPU over the crawl (from /proc), to see whether it was the limit,
  and its access log (requests served);
- t95: seconds until 95 % of the pages were fetched (a long tail after it means a few slow
  hosts, e.g. those with a Crawl-delay, finished the run alone);
- span: median over hosts of the time from a host's first page to its last (near the wall
  time, hosts were crawled side by side and each host's chain of requests and delays,
  not the engine's throughput, set the pace);
- for ours, the politeness floor: the shortest wall time the per-host delays allow (the
  slowest host's requests one after another, max(delay, Crawl-delay) apart); the engine
  cannot beat it, however fast it is.

The last line printed is machine-readable:
    fetch_engine pages_per_s=<ours> scrapy_pages_per_s=<n> ratio=<ours/scrapy>
        scale_1024_vs_64=<ours at the highest level / ours at the lowest>
        cpu_ms_per_page=<ours> scrapy_cpu_ms_per_page=<Scrapy's>
with the figures of the highest level (1024 by default) and, for the scale, the lowest
(64 by default); CPU ms per page is crawler CPU (user + sys) over pages fetched. Exit status: 0 when every run completed (the figures are measurements,
not pass/fail), 1 when a crawler failed or a page count is far from the expected one.

Network: nothing but the demo web. Both crawlers resolve *.demo.test to 127.0.0.1 by their
own resolvers and keep to *.demo.test; on top of that every crawler process installs
bench/netguard.py, which refuses any connection but 127.0.0.1:<demo port> and any system
name lookup.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(1, str(PROJECT_ROOT))

from crawl_assets.crawler.url_policy.sharding import shard_of  # noqa: E402
from crawl_assets.crawler.vocabulary import StatusClass  # noqa: E402
from demoweb import DemoWeb  # noqa: E402
from demoweb.process import DemoWebProcess, DemoWebStartError  # noqa: E402
from measures import median_host_span, peak_rss_kb, time_to_fraction  # noqa: E402

PYTHON = sys.executable
MAX_DEPTH = 16  # the engine's default max_depth; Scrapy gets the same DEPTH_LIMIT
SERVER_START_TIMEOUT_S = 30.0
COUNT_TOLERANCE = 0.10  # a page count more than 10 % below the expected one is a failure


class BenchError(RuntimeError):
    """Something broke: a crawler crashed or timed out, or its page count is far off."""


# -- the demo web -----------------------------------------------------------------------------

class DemoServer:
    """The demo web in its own process on a free loopback port (demoweb.process)."""

    def __init__(self, hosts: int, pages_per_host: int, workdir: Path):
        self.hosts, self.pages_per_host = hosts, pages_per_host
        self.process = DemoWebProcess(seed=1, hosts=hosts, pages_per_host=pages_per_host,
                                      access_log=workdir / f"access-{time.monotonic_ns()}.parquet",
                                      stderr_path=workdir / "demoweb.stderr",
                                      start_timeout=SERVER_START_TIMEOUT_S)
        self.port = 0
        self.requests = 0  # answered, from the access log once stopped

    def __enter__(self) -> "DemoServer":
        try:
            self.process.start()
        except DemoWebStartError as exc:
            raise BenchError(str(exc)) from exc
        self.port = self.process.port
        return self

    def web(self) -> DemoWeb:
        return self.process.web

    def cpu_seconds(self) -> float:
        """user + sys of the server process so far (Linux /proc; 0.0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc) -> None:
        if self.process.web is None:
            return
        self.requests = len(self.process.stop())
        self.process.access_log_path.unlink(missing_ok=True)


# -- one run's figures ----------------------------------------------------------------------

@dataclass
class RunResult:
    engine: str  # "ours" or "scrapy"
    level: int
    wall_s: float
    pages: int
    cpu_s: float
    rss_mb: list[float]  # peak RSS of each crawler process
    page_keys: set[str]  # "host/path" of each page fetched
    server_cpu_s: float = 0.0
    server_requests: int = 0
    mean_response_ms: float = 0.0
    delay_floor_s: float | None = None  # ours only
    t95_s: float = 0.0  # seconds until 95 % of the pages were fetched
    host_span_s: float = 0.0  # median over hosts: first page to last page
    other_outcomes: dict[str, int] = field(default_factory=dict)  # not-ok outcomes, counted
    warc_mb: float | None = None  # ours only: WARC files written

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages if self.pages else 0.0


# -- our engine ---------------------------------------------------------------------------------

@dataclass
class ShardJob:
    shard: int
    shard_count: int
    concurrent_hosts: int
    delay_s: float
    max_pages_per_host: int
    port: int
    seeds: list[str]
    warc_dir: str
    overrides: dict[str, str] = field(default_factory=dict)


def engine_settings(job: ShardJob):
    """The real job's settings, with the benchmark's delay and concurrency, scoped to the demo."""
    import ipaddress

    from crawl_assets.crawler.settings import NetworkException, load_settings

    base = load_settings(use_env=False)
    values = dict(
        default_delay_s=job.delay_s,
        max_concurrent_hosts=job.concurrent_hosts,
        shard_count=job.shard_count,
        max_pages_per_host=job.max_pages_per_host,
        max_depth=MAX_DEPTH,
        resolver_overrides={"*.demo.test": "127.0.0.1"},
        host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),),
    )
    # --set overrides take the type of the value they replace (numbers, in practice).
    values.update({key: type(getattr(base, key))(value) for key, value in job.overrides.items()})
    return dataclasses.replace(base, **values)


def _cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def crawl_shard(job: ShardJob, start, conn) -> None:
    """Body of one shard process: import, report ready, wait for the start, crawl, report."""
    try:
        import netguard

        netguard.install(job.port)
        # Imported here, before "ready", like the engine's own modules: the trap defences import
        # datasketch (and with it scipy) at the batch's first new URL, a one-off start-up cost
        # of about 0.7 CPU s per process that would otherwise count as crawling.
        import datasketch  # noqa: F401

        from crawl_assets.crawler.batches.batch import run_fetch_batch
        from crawl_assets.crawler.fetching.workbench import FetchTask

        settings = engine_settings(job)
        tasks = [FetchTask.for_url(url) for url in job.seeds]
        conn.send(("ready", None))
        start.wait()
        cpu_before = _cpu_now()
        result = run_fetch_batch(settings, job.shard, tasks, Path(job.warc_dir), f"bench-s{job.shard:02d}")
        ended = time.monotonic()
        cpu = _cpu_now() - cpu_before
        records = result.output.records
        ok = [r for r in records if r.status_class == StatusClass.OK]
        conn.send(("done", {
            "ended": ended,  # CLOCK_MONOTONIC is system-wide on Linux: comparable across processes
            "cpu_s": cpu,
            "max_rss_kb": peak_rss_kb(),
            "page_keys": [f"{r.host}{urlsplit(r.url).path}" for r in ok],
            "outcomes": dict(Counter(r.status_class for r in records)),
            # Requests per host (robots.txt excluded), for the politeness floor.
            "host_requests": dict(Counter(r.host for r in records if r.status_class != StatusClass.ROBOTS_DISALLOWED)),
            "response_ms_sum": sum(r.duration_ms for r in ok),
            "fetched_at": [r.fetched_at.timestamp() for r in ok],
            "host_span_s": median_host_span((r.host, r.fetched_at.timestamp()) for r in ok),
            "warc_bytes": sum(p.stat().st_size for p in result.warc_files),
        }))
    except BaseException:  # reported to the parent, which fails the benchmark
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def _receive(conn, process, deadline: float, expected: str):
    if not conn.poll(max(0.0, deadline - time.monotonic())):
        raise BenchError(f"shard process {process.pid} timed out waiting for {expected!r}")
    try:
        kind, payload = conn.recv()
    except EOFError:
        raise BenchError(f"shard process {process.pid} died (exit code {process.exitcode})") from None
    if kind == "error":
        raise BenchError(f"shard process {process.pid} failed:\n{payload}")
    return payload


def run_ours(server: DemoServer, level: int, args: argparse.Namespace) -> RunResult:
    ctx = multiprocessing.get_context("spawn")
    processes = args.processes
    web = server.web()
    seeds_by_shard: list[list[str]] = [[] for _ in range(processes)]
    for index in range(server.hosts):
        seeds_by_shard[shard_of(web.hostname(index), processes)].append(web.base_url(index) + "/")
    warc_root = Path(tempfile.mkdtemp(prefix="bench-warc-"))
    start = ctx.Event()
    workers = []
    try:
        for shard in range(processes):
            job = ShardJob(shard, processes, max(1, level // processes), args.delay,
                           args.pages_per_host + 16, server.port, seeds_by_shard[shard],
                           str(warc_root / f"s{shard:02d}"), args.overrides)
            receiver, sender = ctx.Pipe(duplex=False)
            process = ctx.Process(target=crawl_shard, args=(job, start, sender), daemon=True)
            process.start()
            sender.close()
            workers.append((process, receiver))
        deadline = time.monotonic() + 120
        for process, receiver in workers:
            _receive(receiver, process, deadline, "ready")
        server_cpu_before = server.cpu_seconds()
        started, started_wall = time.monotonic(), time.time()
        start.set()
        deadline = started + args.run_timeout
        reports = [_receive(receiver, process, deadline, "done") for process, receiver in workers]
        server_cpu = server.cpu_seconds() - server_cpu_before
        for process, _ in workers:
            process.join(timeout=30)
    finally:
        for process, receiver in workers:
            if process.is_alive():
                process.kill()
                process.join()
            receiver.close()
        shutil.rmtree(warc_root, ignore_errors=True)

    outcomes: Counter[str] = Counter()
    for report in reports:
        outcomes.update(report["outcomes"])
    pages = outcomes.pop(StatusClass.OK, 0)
    keys = [k for report in reports for k in report["page_keys"]]
    wall = max(report["ended"] for report in reports) - started
    return RunResult(
        engine="ours", level=level, wall_s=wall, pages=pages,
        cpu_s=sum(r["cpu_s"] for r in reports),
        rss_mb=[r["max_rss_kb"] / 1024 for r in reports],
        page_keys=set(keys), server_cpu_s=server_cpu,
        mean_response_ms=sum(r["response_ms_sum"] for r in reports) / max(1, pages),
        delay_floor_s=delay_floor(web, reports, args.delay),
        t95_s=time_to_fraction([t - started_wall for r in reports for t in r["fetched_at"]]),
        host_span_s=statistics.median(r["host_span_s"] for r in reports),
        other_outcomes=dict(outcomes),
        warc_mb=sum(r["warc_bytes"] for r in reports) / 2**20,
    )


def delay_floor(web: DemoWeb, reports: list[dict], delay_s: float) -> float:
    """Shortest wall time the per-host delays allow: the slowest host's requests one after
    another, max(delay, Crawl-delay) apart. (Waiting out a delay holds no worker.)"""
    floor = 0.0
    for report in reports:
        for host, requests in report["host_requests"].items():
            crawl_delay = web.robots_rules(web.host_index(host))["crawl_delay"] or 0.0
            # Pages + robots.txt = requests + 1, so `requests` gaps between them.
            floor = max(floor, requests * max(delay_s, crawl_delay))
    return floor


# -- Scrapy ---------------------------------------------------------------------------------------

def run_scrapy(server: DemoServer, level: int, args: argparse.Namespace, workdir: Path) -> RunResult:
    web = server.web()
    seeds_file = workdir / "scrapy-seeds.txt"
    seeds_file.write_text("".join(web.base_url(i) + "/\n" for i in range(server.hosts)))
    stats_file = workdir / "scrapy-stats.json"
    stats_file.unlink(missing_ok=True)
    expected = expected_pages(args)
    cmd = [PYTHON, str(BENCH_DIR / "scrapy_peer.py"), "--seeds-file", str(seeds_file),
           "--concurrency", str(level), "--delay", str(args.delay), "--port", str(server.port),
           "--stats-out", str(stats_file), "--depth-limit", str(MAX_DEPTH),
           "--max-pages", str(2 * expected + 100), "--timeout", str(args.run_timeout)]
    server_cpu_before = server.cpu_seconds()
    try:
        proc = subprocess.run(cmd, cwd=PROJECT_ROOT, timeout=args.run_timeout + 60,
                              capture_output=True, text=True)
    except subprocess.TimeoutExpired as exc:
        raise BenchError(f"scrapy at level {level} timed out") from exc
    server_cpu = server.cpu_seconds() - server_cpu_before
    if proc.returncode != 0 or not stats_file.exists():
        raise BenchError(f"scrapy at level {level} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    if proc.stderr.strip():
        print(f"  scrapy@{level} stderr (last lines):\n    "
              + "\n    ".join(proc.stderr.strip().splitlines()[-5:]), file=sys.stderr)
    stats = json.loads(stats_file.read_text())
    statuses = {f"http_{k}": v for k, v in stats["response_statuses"].items() if k != "200"}
    statuses["http_200_incl_robots"] = stats["response_statuses"].get("200", 0)
    finish = stats["scrapy_stats"].get("finish_reason", "?")
    if finish != "finished":
        raise BenchError(f"scrapy at level {level} stopped early: {finish}")
    return RunResult(
        engine="scrapy", level=level, wall_s=stats["wall_s"], pages=stats["pages"],
        cpu_s=stats["cpu_s"], rss_mb=[stats["max_rss_kb"] / 1024],
        page_keys=set(stats["page_keys"]), server_cpu_s=server_cpu,
        mean_response_ms=stats["mean_latency_ms"], other_outcomes=statuses,
        t95_s=stats["t95_s"], host_span_s=stats["host_span_s"],
    )


# -- checks and report ----------------------------------------------------------------------------

def expected_pages(args: argparse.Namespace) -> int:
    return args.hosts * (args.pages_per_host + 2)  # + home page and sitemap.xml


def feed_count(args: argparse.Namespace) -> int:
    """Feeds (RSS, Atom) the demo web serves: ours fetches those the pages link to, Scrapy's
    link extractor skips them (.rss is among its ignored extensions; Atom is not parsed)."""
    web = DemoWeb(seed=1, hosts=args.hosts, pages_per_host=args.pages_per_host, port=0)
    return sum(web.respond(web.hostname(i), path, {}).status == 200
               for i in range(args.hosts) for path in ("/feed.rss", "/feed.atom"))


def check_counts(runs: list[RunResult], expected: int, extra: dict[str, int]) -> list[str]:
    """Problems that make the benchmark fail: page counts far from the expected one
    (extra: what an engine may fetch on top, e.g. feeds)."""
    problems = []
    for run in runs:
        most = expected + extra.get(run.engine, 0)
        if run.pages < (1 - COUNT_TOLERANCE) * expected or run.pages > most:
            problems.append(f"{run.engine}@{run.level}: {run.pages} pages, expected {expected}..{most}")
    return problems


def print_tables(runs: list[RunResult], args: argparse.Namespace, cores: int) -> None:
    by_key = {(r.engine, r.level): r for r in runs}
    print()
    print(f"Demo web: {args.hosts} hosts x ({args.pages_per_host} pages + home + sitemap) = "
          f"{expected_pages(args)} pages; delay {args.delay} s; ours: {args.processes} processes "
          f"x L/{args.processes} concurrent hosts; Scrapy: 1 process, CONCURRENT_REQUESTS=L; "
          f"{cores} cores")
    if args.overrides:
        print(f"Our engine's settings overridden: {args.overrides}")
    print()
    header = (f"{'L':>5} | {'ours p/s':>8} {'CPU ms/p':>8} {'RSS MB':>7} | "
              f"{'scrapy p/s':>10} {'CPU ms/p':>8} {'RSS MB':>7} | {'ratio':>5}")
    print(header)
    print("-" * len(header))
    for level in args.levels:
        ours, scrapy = by_key[("ours", level)], by_key[("scrapy", level)]
        print(f"{level:>5} | {ours.pages_per_s:>8.0f} {ours.cpu_ms_per_page:>8.2f} {max(ours.rss_mb):>7.0f} | "
              f"{scrapy.pages_per_s:>10.0f} {scrapy.cpu_ms_per_page:>8.2f} {max(scrapy.rss_mb):>7.0f} | "
              f"{ours.pages_per_s / scrapy.pages_per_s:>5.2f}")
    print("(RSS: peak of the largest crawler process; ours runs one process per shard)")
    print()
    header = (f"{'run':<12} {'pages':>6} {'wall s':>7} {'t95 s':>6} {'span s':>6} {'floor s':>7} "
              f"{'CPU s':>6} {'server':>6} {'machine':>7} {'requests':>8} {'resp ms':>7}  notes")
    print(header)
    print("-" * len(header))
    for run in runs:
        machine = (run.cpu_s + run.server_cpu_s) / (run.wall_s * cores)
        floor = f"{run.delay_floor_s:.1f}" if run.delay_floor_s is not None else "-"
        other = ", ".join(f"{k}={v}" for k, v in sorted(run.other_outcomes.items()))
        if run.warc_mb is not None:
            other = f"WARC {run.warc_mb:.0f} MB, " + other
        print(f"{run.engine + '@' + str(run.level):<12} {run.pages:>6} {run.wall_s:>7.1f} {run.t95_s:>6.1f} "
              f"{run.host_span_s:>6.1f} {floor:>7} {run.cpu_s:>6.1f} {run.server_cpu_s / run.wall_s:>6.0%} "
              f"{machine:>7.0%} {run.server_requests:>8} {run.mean_response_ms:>7.1f}  {other}")
    print("  t95: seconds until 95 % of the pages were fetched")
    print("  span: median over hosts of the seconds from a host's first page to its last")
    print("  floor: shortest wall time our per-host delays allow: the slowest host's requests one")
    print("         after another, max(delay, Crawl-delay) apart (Scrapy ignores Crawl-delay)")
    print("  CPU: crawler processes' CPU time during the crawl; server: the demo web's CPU time / wall")
    print("       (100 % = one core, it is one process); machine: crawler + server CPU / (wall x cores)")
    print("  requests: answered by the demo web, robots.txt included; resp ms: mean time per page")
    print("       fetch as the crawler saw it (ours: duration_ms, Scrapy: download_latency)")
    print("  notes: outcomes other than a page (ours: status classes; Scrapy: HTTP statuses, robots.txt")
    print("       included)")
    for level in args.levels:
        ours, scrapy = by_key[("ours", level)], by_key[("scrapy", level)]
        only_ours, only_scrapy = len(ours.page_keys - scrapy.page_keys), len(scrapy.page_keys - ours.page_keys)
        print(f"L={level}: pages fetched by ours only: {only_ours}, by Scrapy only: {only_scrapy}")


def summary_line(runs: list[RunResult], levels: list[int]) -> str:
    by_key = {(r.engine, r.level): r for r in runs}
    top, low = max(levels), min(levels)
    ours, scrapy = by_key[("ours", top)], by_key[("scrapy", top)]
    scale = ours.pages_per_s / by_key[("ours", low)].pages_per_s
    return (f"fetch_engine pages_per_s={ours.pages_per_s:.0f} scrapy_pages_per_s={scrapy.pages_per_s:.0f} "
            f"ratio={ours.pages_per_s / scrapy.pages_per_s:.2f} scale_1024_vs_64={scale:.2f} "
            f"cpu_ms_per_page={ours.cpu_ms_per_page:.2f} scrapy_cpu_ms_per_page={scrapy.cpu_ms_per_page:.2f}")


# -- main --------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Our fetch engine vs Scrapy on the demo web.")
    parser.add_argument("--hosts", type=int, default=None, help="demo web hosts (default 1024; quick 128)")
    parser.add_argument("--pages-per-host", type=int, default=None, help="default 10")
    parser.add_argument("--levels", default=None, help="concurrent hosts, comma-separated "
                                                       "(default 64,256,1024; quick 16,64)")
    parser.add_argument("--delay", type=float, default=0.01, help="per-host delay, seconds")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                        help="shard processes for our engine (default: cores)")
    parser.add_argument("--run-timeout", type=float, default=None,
                        help="seconds one crawl may take (default 300; quick 120)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one of our engine's settings, for experiments "
                             "(e.g. --set response_time_factor=0); repeatable")
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args(argv)
    args.overrides = parse_overrides(parser, args.set)
    quick = args.quick
    args.hosts = args.hosts or (128 if quick else 1024)
    args.pages_per_host = args.pages_per_host or 10
    args.levels = [int(x) for x in (args.levels or ("16,64" if quick else "64,256,1024")).split(",")]
    args.run_timeout = args.run_timeout or (120.0 if quick else 300.0)
    return args


def parse_overrides(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, str]:
    from crawl_assets.crawler.settings import CrawlSettings

    known = {f.name for f in dataclasses.fields(CrawlSettings)}
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in known:
            parser.error(f"--set {item!r}: expected KEY=VALUE with KEY a crawl setting")
        overrides[key] = value
    return overrides


def run_level(level: int, args: argparse.Namespace, workdir: Path) -> list[RunResult]:
    """Ours, then Scrapy, each against a freshly started demo web."""
    results = []
    for engine in ("ours", "scrapy"):
        with DemoServer(args.hosts, args.pages_per_host, workdir) as server:
            if engine == "ours":
                run = run_ours(server, level, args)
            else:
                run = run_scrapy(server, level, args, workdir)
        run.server_requests = server.requests
        print(f"  {engine}@{level}: {run.pages} pages in {run.wall_s:.1f} s = {run.pages_per_s:.0f} pages/s, "
              f"{run.cpu_ms_per_page:.2f} CPU ms/page, server CPU {run.server_cpu_s / run.wall_s:.0%}",
              file=sys.stderr, flush=True)
        results.append(run)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cores = os.cpu_count() or 1
    began = time.monotonic()
    runs: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-fetch-") as tmp:
        try:
            for level in args.levels:
                runs += run_level(level, args, Path(tmp))
        except BenchError as exc:
            print(f"fetch_engine: FAILED: {exc}", file=sys.stderr)
            return 1
    print_tables(runs, args, cores)
    print(f"\nbenchmark took {time.monotonic() - began:.0f} s")
    problems = check_counts(runs, expected_pages(args), {"ours": feed_count(args)})
    for problem in problems:
        print(f"fetch_engine: page count off: {problem}", file=sys.stderr)
    print(summary_line(runs, args.levels))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
