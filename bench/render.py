"""Render-tier benchmark: plain pages and script-built pages side by side on the demo web,
start-up and steady state apart. Run from the project root with the project's venv (needs
/usr/bin/chromium and Playwright, both installed by `make setup system-packages`; never a
downloaded browser):

    .venv/bin/python bench/render.py [--hosts 20] [--pages-per-host 10] [--delay 0.05] [--auto]

About two minutes on 2 cores. What is crawled: the demo web (demoweb) in a subprocess on a free
port of 127.0.0.1 with its script-built hosts on: the three single-page-application hosts
(spa=True: spa-json, spa-router, spa-more; demoweb/special_hosts/spa_hosts.py) and the ten
magazine sites of 20 pages each (spa_sites=True: spa-site-0 ... spa-site-9, whose pages load a
stylesheet, a web font, pictures and a video; demoweb/special_hosts/spa_sites.py), and --hosts
ordinary hosts of --pages-per-host pages beside them. Two crawls of the same web, each in a
process of its own against a freshly started server, from every host's home page until nothing
new is found (one shard, the real job's settings but for the delay and the demo's scope):

- plain: render_hosts empty, nothing is rendered (the crawl a crawler without a browser makes);
- render: render_hosts = the script-built hosts' names, so their pages are rendered in headless
  Chromium (crawl_assets/crawler/rendering/), every request of the browser through the
  crawler's polite fetch path; with --auto, render_hosts = ["auto"]: no host is named, the
  crawler learns which need the browser from a sample of the pages that look script-built
  (render_decision.py).

Measured:
- js_only_found / js_only_total: the script-built hosts' pages no plain crawl can find
  (SpaHost.js_only, SpaSite.js_only) that the render crawl fetched (status ok); the plain
  crawl's figure is printed beside it;
- rendered_pages, and rendered pages of the ordinary hosts (must be 0);
- CPU of the whole process tree: the crawl process's and every process under it (Playwright's
  driver, Chromium and its renderers), read at a few moments of the render crawl: live
  descendants from /proc (their own time and their reaped children's), the reaped ones from
  RUSAGE_CHILDREN (the crawl process is a child subreaper, prctl PR_SET_CHILD_SUBREAPER, so a
  Chromium helper orphaned on exit is reparented to it). The bench wraps the render pass's
  BrowserPool and render_page (names of crawl_assets.crawler.rendering.render_pass) to read it:
  before the browser starts, after WARMUP_PAGES pages are rendered, when the last page is
  rendered, and once the browser is closed.
  plain_cpu_ms_per_page = plain crawl CPU / pages it fetched;
  render_cpu_ms_per_page (steady state) = CPU from the WARMUP_PAGES-th rendered page to the
  last / the pages rendered in between (their plain fetches, the engine's turns and the
  browser's requests included);
  render_startup_cpu_s = CPU from the browser's start to its close, less the steady cost of the
  pages it rendered: starting Playwright and Chromium, the first pages' extra, closing;
  render_vs_plain = render_cpu_ms_per_page / plain_cpu_ms_per_page (goal: at most 100);
- render_pages_per_s: rendered pages / seconds the browser was open (RenderCounts.browser_s);
- subresource_requests: from the demo web's own access log of the render crawl, the requests
  to the script-built hosts that are neither one of their pages nor robots.txt (scripts,
  stylesheets, JSON, media); spa_host_requests: every request to those hosts;
- politeness_violations: from the same log, per host, pairs of consecutive requests where the
  second started before the first was answered, or sooner after it than the host's delay
  (max(--delay, its robots.txt Crawl-delay)).

The last line:
    render pages= js_only_found= js_only_total= rendered_pages= plain_cpu_ms_per_page=
        render_cpu_ms_per_page= render_startup_cpu_s= render_vs_plain= render_pages_per_s=
        subresource_requests= spa_host_requests= politeness_violations=
(pages: the render crawl's pages fetched, status ok). Exit status 1 when a goal is missed:
js_only_found / js_only_total >= 0.95, politeness_violations = 0, no page of an ordinary host
rendered, render_vs_plain <= 100. Network: the crawl processes install bench/netguard.py
(loopback, the demo port only); Chromium's own requests never leave the browser but through
the crawler (request interception).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import multiprocessing
import os
import re
import resource
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(1, str(PROJECT_ROOT))

from crawl_assets.crawler.vocabulary import StatusClass  # noqa: E402
from demoweb.process import DemoWebProcess  # noqa: E402
from demoweb.special_hosts.spa_hosts import CRAWL_DELAY_S, spa_hosts  # noqa: E402
from demoweb.special_hosts.spa_sites import spa_sites  # noqa: E402
from measures import load_line  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
JS_ONLY_GOAL = 0.95
RENDER_VS_PLAIN_GOAL = 100
WARMUP_PAGES = 20  # pages rendered before the steady state is read
RUN_TIMEOUT_S = 900.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CrawlJob:
    port: int
    seeds: list[str]
    render_hosts: tuple[str, ...]
    delay_s: float
    max_pages_per_host: int
    warc_dir: str


@dataclass
class CpuMarks:
    """The process tree's CPU seconds at moments of the render pass, and pages rendered then."""

    browser_start: float | None = None
    warm: tuple[float, int] | None = None  # after WARMUP_PAGES pages
    last_page: tuple[float, int] | None = None  # when the browser is about to close
    browser_closed: float | None = None
    by_process: dict[str, float] = field(default_factory=dict)  # CPU s by kind of process, when the browser closes


@dataclass
class CrawlReport:
    ok_urls: set[str]
    rendered: list[tuple[str, str]]  # (host, url) of each page rendered
    cpu_s: float  # the whole tree, seeds handed over to batch done
    cpu_children_s: float  # of it, the processes under the crawl process
    wall_s: float
    browser_s: float
    browser_requests: int
    marks: CpuMarks = field(default_factory=CpuMarks)


def crawl_settings(job: CrawlJob):
    import ipaddress

    from crawl_assets.crawler.settings import NetworkException, load_settings

    return dataclasses.replace(
        load_settings(use_env=False), default_delay_s=job.delay_s, shard_count=1,
        max_pages_per_host=job.max_pages_per_host, render_hosts=job.render_hosts,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))


def _rusage_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _descendants(pid: int) -> list[int]:
    """Every live process under pid (from /proc/<pid>/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def _process_cpu_s(pid: int) -> float:
    """A live (or not yet reaped) process's CPU and that of the children it has reaped."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / CLOCK_TICKS  # utime stime cutime cstime


def process_kind(pid: int) -> str:
    """What a process under the crawl is: the Playwright driver, Chromium's browser process, or
    one of Chromium's --type= helpers (renderer, gpu-process, utility: its sub-type). Chromium
    rewrites its command line as one string: the flags are searched in it."""
    try:
        command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "chromium" not in command:
        return "playwright driver" if "node" in command else command.split(" ", 1)[0].rsplit("/", 1)[-1]
    kind = re.search(r"--type=(\S+)", command)
    sub = re.search(r"--utility-sub-type=(\w+)", command)
    return f"chromium {kind.group(1) if kind else 'browser'}" + (f" ({sub.group(1)})" if sub else "")


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds of the live processes under this one, by process_kind (this one's own under
    "crawl (python)", its reaped children's under "reaped")."""
    found = {"crawl (python)": _rusage_s(resource.RUSAGE_SELF), "reaped": _rusage_s(resource.RUSAGE_CHILDREN)}
    for pid in _descendants(os.getpid()):
        kind = process_kind(pid)
        found[kind] = found.get(kind, 0.0) + _process_cpu_s(pid)
    return found


def tree_cpu_s() -> float:
    """CPU seconds of this process and everything it started, reaped or alive."""
    own = _rusage_s(resource.RUSAGE_SELF) + _rusage_s(resource.RUSAGE_CHILDREN)
    return own + sum(_process_cpu_s(pid) for pid in _descendants(os.getpid()))


def _reap_descendants(timeout_s: float = 10.0) -> None:
    """Wait for every child (orphaned Chromium helpers reparented here included), so their CPU
    is in RUSAGE_CHILDREN."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            time.sleep(0.05)


def mark_render_pass(marks: CpuMarks) -> None:
    """Wrap the render pass's BrowserPool and render_page so the tree's CPU is read at the
    moments CpuMarks names (render_pass looks both up in its own module at call time)."""
    from crawl_assets.crawler.rendering import render_pass

    pool_class, render = render_pass.BrowserPool, render_pass.render_page
    rendered = 0

    class MarkedPool(pool_class):
        async def __aenter__(self):
            marks.browser_start = tree_cpu_s()
            return await super().__aenter__()

        async def __aexit__(self, *exc):
            marks.last_page = (tree_cpu_s(), rendered)
            marks.by_process = cpu_by_kind()
            await super().__aexit__(*exc)
            marks.browser_closed = tree_cpu_s()

    async def marked_render(*args, **kwargs):
        nonlocal rendered
        result = await render(*args, **kwargs)
        rendered += 1
        if rendered == WARMUP_PAGES:
            marks.warm = (tree_cpu_s(), rendered)
        return result

    render_pass.BrowserPool, render_pass.render_page = MarkedPool, marked_render


def crawl(job: CrawlJob, start, conn) -> None:
    """Body of a crawl process: import, report ready, wait for the start, crawl, report."""
    try:
        import netguard

        netguard.install(job.port)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        import datasketch  # noqa: F401 - imported lazily by the trap defences: a start-up cost, not crawling

        from crawl_assets.crawler.batches.batch import run_fetch_batch
        from crawl_assets.crawler.fetching.workbench import FetchTask

        settings = crawl_settings(job)
        tasks = [FetchTask.for_url(url) for url in job.seeds]
        marks = CpuMarks()
        mark_render_pass(marks)
        conn.send(("ready", None))
        start.wait()
        children_before, cpu_before, started = _rusage_s(resource.RUSAGE_CHILDREN), tree_cpu_s(), time.monotonic()
        result = run_fetch_batch(settings, 0, tasks, Path(job.warc_dir), "bench-render")
        wall = time.monotonic() - started
        _reap_descendants()
        records = result.output.records
        render = result.render
        conn.send(("done", CrawlReport(
            ok_urls={r.url for r in records if r.status_class == StatusClass.OK},
            rendered=[(r.host, r.url) for r in records if r.rendered],
            cpu_s=tree_cpu_s() - cpu_before, cpu_children_s=_rusage_s(resource.RUSAGE_CHILDREN) - children_before,
            wall_s=wall, browser_s=render.browser_s if render else 0.0,
            browser_requests=render.browser_requests if render else 0, marks=marks)))
    except BaseException:  # reported to the parent, which fails the benchmark
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def _receive(conn, deadline: float):
    if not conn.poll(max(0.0, deadline - time.monotonic())):
        raise RuntimeError("the crawl process timed out")
    kind, payload = conn.recv()
    if kind == "error":
        raise RuntimeError(f"the crawl process failed:\n{payload}")
    return payload


@dataclass(frozen=True)
class ScriptBuilt:
    """The web's script-built hosts: their names, pages, and the pages only a browser finds."""

    hostnames: tuple[str, ...]
    homes: tuple[str, ...]
    pages: frozenset[str]
    js_only: frozenset[str]

    @classmethod
    def of(cls, web) -> "ScriptBuilt":
        hosts = [*spa_hosts(web), *spa_sites(web)]
        return cls(tuple(h.hostname for h in hosts), tuple(h.home for h in hosts),
                   frozenset(u for h in hosts for u in h.pages), frozenset(u for h in hosts for u in h.js_only))


def run_crawl(args: argparse.Namespace, render: bool, workdir: Path) -> tuple[CrawlReport, list[dict], object]:
    """One crawl against a fresh demo web; its report, the server's access log and the web."""
    ctx = multiprocessing.get_context("spawn")
    server = DemoWebProcess(seed=1, hosts=args.hosts, pages_per_host=args.pages_per_host, spa=True, spa_sites=True,
                            access_log=workdir / f"access-{render}.parquet", stderr_path=workdir / "demoweb.stderr")
    with server:
        web = server.web
        built = ScriptBuilt.of(web)
        seeds = [web.base_url(i) + "/" for i in range(args.hosts)] + list(built.homes)
        listed = ("auto",) if args.auto else built.hostnames
        job = CrawlJob(server.port, seeds, listed if render else (), args.delay,
                       max(args.pages_per_host, 20) + 16, str(workdir / f"warc-{render}"))
        start = ctx.Event()
        receiver, sender = ctx.Pipe(duplex=False)
        process = ctx.Process(target=crawl, args=(job, start, sender), daemon=True)
        process.start()
        sender.close()
        try:
            _receive(receiver, time.monotonic() + 120)
            start.set()
            report = _receive(receiver, time.monotonic() + RUN_TIMEOUT_S)
            process.join(timeout=30)
        finally:
            if process.is_alive():
                process.kill()
                process.join()
        rows = server.stop()
    return report, rows, web


def host_delays(web, delay_s: float) -> dict[str, float]:
    """Each host's delay: the crawl's, or its robots.txt Crawl-delay when longer."""
    delays = {web.hostname(i): max(delay_s, web.robots_rules(i)["crawl_delay"] or 0.0) for i in range(web.hosts)}
    for host in spa_hosts(web):
        delays[host.hostname] = max(delay_s, CRAWL_DELAY_S if host.kind == "json" else 0.0)
    for site in spa_sites(web):
        delays[site.hostname] = delay_s
    return delays


def politeness_violations(rows: list[dict], delays: dict[str, float]) -> list[str]:
    """Pairs of a host's consecutive requests (access log, by start) that overlap or come
    sooner after the answer before than the host's delay."""
    by_host: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["start"]):
        by_host.setdefault(row["host"], []).append(row)
    found = []
    for host, hits in by_host.items():
        for before, after in zip(hits, hits[1:]):
            gap = after["start"] - before["end"]
            if gap < delays[host]:
                found.append(f"{host}: {after['path']} {gap:.4f}s after {before['path']}")
    return found


def script_built_requests(rows: list[dict], built: ScriptBuilt) -> tuple[int, int]:
    """(requests to the script-built hosts that are neither a page of theirs nor robots.txt,
    every request to those hosts), from the demo web's access log."""
    from urllib.parse import urlsplit

    hosts = set(built.hostnames)
    pages = {(urlsplit(u).hostname, urlsplit(u).path or "/") for u in built.pages}
    mine = [r for r in rows if r["host"] in hosts]
    subresources = [r for r in mine if (r["host"], r["path"].split("?", 1)[0]) not in pages
                    and r["path"] != "/robots.txt"]
    return len(subresources), len(mine)


@dataclass(frozen=True)
class RenderCost:
    steady_ms: float  # CPU ms a rendered page, past the warm-up
    startup_s: float  # CPU s of the render pass beyond the steady cost of its pages


def render_cost(marks: CpuMarks) -> RenderCost:
    if marks.warm is None or marks.last_page is None or marks.last_page[1] <= marks.warm[1]:
        raise RuntimeError(f"fewer than {WARMUP_PAGES + 1} pages rendered: no steady state to measure")
    (warm_cpu, warm_pages), (last_cpu, last_pages) = marks.warm, marks.last_page
    steady_s = (last_cpu - warm_cpu) / (last_pages - warm_pages)
    return RenderCost(1000 * steady_s, marks.browser_closed - marks.browser_start - steady_s * last_pages)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20, help="ordinary hosts beside the script-built hosts")
    parser.add_argument("--pages-per-host", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.05, help="default_delay_s of both crawls")
    parser.add_argument("--auto", action="store_true", help='render_hosts = ["auto"] instead of the script-built hosts')
    args = parser.parse_args(argv)
    if args.hosts < 1 or args.pages_per_host < 1 or args.delay < 0:
        parser.error("--hosts and --pages-per-host must be at least 1 and --delay at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not Path("/usr/bin/chromium").exists():
        print("render: /usr/bin/chromium is missing; install it with `make system-packages`.", file=sys.stderr)
        return 1
    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        plain, plain_rows, web = run_crawl(args, render=False, workdir=Path(tmp))
        rendering, rows, web = run_crawl(args, render=True, workdir=Path(tmp))
    built = ScriptBuilt.of(web)
    delays = host_delays(web, args.delay)
    violations = politeness_violations(rows, delays)
    plain_violations = politeness_violations(plain_rows, delays)
    plain_ms = 1000 * plain.cpu_s / max(1, len(plain.ok_urls))
    cost = render_cost(rendering.marks)
    rendered = len(rendering.rendered)
    wrongly_rendered = [u for host, u in rendering.rendered if host not in built.hostnames]
    found = len(built.js_only & rendering.ok_urls)
    subresources, spa_requests = script_built_requests(rows, built)
    ratio = cost.steady_ms / max(plain_ms, 1e-9)

    print(f"{'crawl':<8}{'pages':>7}{'js_only':>11}{'rendered':>10}{'cpu_s':>8}{'of it children':>16}{'wall_s':>8}"
          f"{'browser_s':>11}{'browser_req':>13}{'violations':>12}")
    for name, report, bad in (("plain", plain, plain_violations), ("render", rendering, violations)):
        print(f"{name:<8}{len(report.ok_urls):>7}{len(built.js_only & report.ok_urls):>6}/{len(built.js_only):<4}"
              f"{len(report.rendered):>10}{report.cpu_s:>8.2f}{report.cpu_children_s:>16.2f}"
              f"{report.wall_s:>8.2f}{report.browser_s:>11.2f}{report.browser_requests:>13}{len(bad):>12}")
    print(f"render steady state: {cost.steady_ms:.1f} CPU ms a page past the first {WARMUP_PAGES} "
          f"({ratio:.0f}x a plain page); start-up and close: {cost.startup_s:.2f} CPU s; "
          f"rendered pages of ordinary hosts: {len(wrongly_rendered)}; access log rows: {len(rows)}; "
          f"script-built hosts' requests: {spa_requests} ({subresources} not pages)")
    print("render crawl CPU s by process when the browser closed: " + ", ".join(
        f"{kind} {s:.2f}" for kind, s in sorted(rendering.marks.by_process.items(), key=lambda kv: -kv[1]) if s >= 0.01))
    for line in (violations + plain_violations)[:10]:
        print("  violation:", line)
    print(load_line(load_at_start))
    print(f"render pages={len(rendering.ok_urls)} js_only_found={found} js_only_total={len(built.js_only)} "
          f"rendered_pages={rendered} plain_cpu_ms_per_page={plain_ms:.2f} render_cpu_ms_per_page={cost.steady_ms:.1f} "
          f"render_startup_cpu_s={cost.startup_s:.2f} render_vs_plain={ratio:.0f} "
          f"render_pages_per_s={rendered / max(rendering.browser_s, 1e-9):.2f} subresource_requests={subresources} "
          f"spa_host_requests={spa_requests} politeness_violations={len(violations)}")
    met = (found >= JS_ONLY_GOAL * len(built.js_only) and not violations and not wrongly_rendered
           and ratio <= RENDER_VS_PLAIN_GOAL)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
