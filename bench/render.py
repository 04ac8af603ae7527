"""Render-tier benchmark: plain pages and script-only pages side by side on the demo web.
Run from the project root with the project's venv (needs /usr/bin/chromium and Playwright,
both installed by `make setup system-packages`; never a downloaded browser):

    .venv/bin/python bench/render.py [--hosts 20] [--pages-per-host 10] [--delay 0.05] [--auto]

About a minute on 2 cores. What is crawled: the demo web (demoweb) in a subprocess on a free
port of 127.0.0.1 with its single-page-application hosts on (spa=True: spa-json, spa-router,
spa-more; demoweb/special_hosts/spa_hosts.py), --hosts ordinary hosts of --pages-per-host
pages beside them. Two crawls of the same web, each in a process of its own against a freshly
started server, from every host's home page until nothing new is found (one shard, the real
job's settings but for the delay and the demo's scope):

- plain: render_hosts empty, nothing is rendered (the crawl a crawler without a browser makes);
- render: render_hosts = the SPA hosts' names, so their pages are rendered in headless Chromium
  (crawl_assets/crawler/rendering/), every request of the browser through the crawler's polite
  fetch path; with --auto, render_hosts = ["auto"]: no host is named, the crawler learns which
  need the browser from a sample of the pages that look script-built (render_decision.py).

Measured:
- js_only_found / js_only_total: the SPA hosts' pages no plain crawl can find (SpaHost.js_only)
  that the render crawl fetched (status ok); the plain crawl's figure is printed beside it;
- rendered_pages, and rendered pages of the ordinary hosts (must be 0);
- CPU: user + sys of the crawl's process and of every process under it (Playwright's driver,
  Chromium and its renderers), from the moment the seeds are handed over until the batch is
  done and every descendant reaped. The crawl process makes itself a child subreaper
  (prctl PR_SET_CHILD_SUBREAPER), so a Chromium helper orphaned on exit is reparented to it
  and reaped by it, and RUSAGE_CHILDREN holds the CPU of the whole tree.
  plain_cpu_ms_per_page = plain crawl CPU / pages it fetched;
  render_cpu_ms_per_page = (render crawl CPU - plain_cpu_ms_per_page x its pages not rendered)
  / rendered pages: what a rendered page costs, its plain fetch and the browser's start included;
- render_pages_per_s: rendered pages / seconds the browser was open (RenderCounts.browser_s;
  the spa-json host's Crawl-delay of 0.2 s and its four requests a page set the pace);
- politeness_violations: from the demo web's own access log of the render crawl (the browser's
  requests for scripts and JSON included), per host, pairs of consecutive requests where the
  second started before the first was answered, or sooner after it than the host's delay
  (max(--delay, its robots.txt Crawl-delay)).

The last line:
    render pages= js_only_found= js_only_total= rendered_pages= plain_cpu_ms_per_page=
        render_cpu_ms_per_page= render_pages_per_s= politeness_violations=
(pages: the render crawl's pages fetched, status ok). Exit status 1 when a goal is missed:
js_only_found / js_only_total >= 0.95, politeness_violations = 0, no page of an ordinary host
rendered. Network: the crawl processes install bench/netguard.py (loopback, the demo port only);
Chromium's own requests never leave the browser but through the crawler (request interception).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import multiprocessing
import os
import resource
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(1, str(PROJECT_ROOT))

from crawl_assets.crawler.vocabulary import StatusClass  # noqa: E402
from demoweb.process import DemoWebProcess  # noqa: E402
from demoweb.special_hosts.spa_hosts import CRAWL_DELAY_S, spa_hosts  # noqa: E402
from measures import load_line  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
JS_ONLY_GOAL = 0.95
RUN_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class CrawlJob:
    port: int
    seeds: list[str]
    render_hosts: tuple[str, ...]
    delay_s: float
    max_pages_per_host: int
    warc_dir: str


@dataclass
class CrawlReport:
    ok_urls: set[str]
    rendered: list[tuple[str, str]]  # (host, url) of each page rendered
    cpu_self_s: float
    cpu_children_s: float
    wall_s: float
    browser_s: float
    browser_requests: int


def crawl_settings(job: CrawlJob):
    import ipaddress

    from crawl_assets.crawler.settings import NetworkException, load_settings

    return dataclasses.replace(
        load_settings(use_env=False), default_delay_s=job.delay_s, shard_count=1,
        max_pages_per_host=job.max_pages_per_host, render_hosts=job.render_hosts,
        resolver_overrides={"*.demo.test": "127.0.0.1"}, host_scope=("*.demo.test",),
        network_exceptions=(NetworkException(("*.demo.test",), (ipaddress.ip_network("127.0.0.0/8"),)),))


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


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
        conn.send(("ready", None))
        start.wait()
        cpu_self, cpu_children, started = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
        result = run_fetch_batch(settings, 0, tasks, Path(job.warc_dir), "bench-render")
        wall = time.monotonic() - started
        _reap_descendants()
        records = result.output.records
        render = result.render
        conn.send(("done", CrawlReport(
            ok_urls={r.url for r in records if r.status_class == StatusClass.OK},
            rendered=[(r.host, r.url) for r in records if r.rendered],
            cpu_self_s=_cpu(resource.RUSAGE_SELF) - cpu_self,
            cpu_children_s=_cpu(resource.RUSAGE_CHILDREN) - cpu_children, wall_s=wall,
            browser_s=render.browser_s if render else 0.0,
            browser_requests=render.browser_requests if render else 0)))
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


def run_crawl(args: argparse.Namespace, render: bool, workdir: Path) -> tuple[CrawlReport, list[dict], object]:
    """One crawl against a fresh demo web; its report, the server's access log and the web."""
    ctx = multiprocessing.get_context("spawn")
    server = DemoWebProcess(seed=1, hosts=args.hosts, pages_per_host=args.pages_per_host, spa=True,
                            access_log=workdir / f"access-{render}.parquet", stderr_path=workdir / "demoweb.stderr")
    with server:
        web = server.web
        spa = spa_hosts(web)
        seeds = [web.base_url(i) + "/" for i in range(args.hosts)] + [h.home for h in spa]
        listed = ("auto",) if args.auto else tuple(h.hostname for h in spa)
        job = CrawlJob(server.port, seeds, listed if render else (), args.delay,
                       args.pages_per_host + 16, str(workdir / f"warc-{render}"))
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
            if gap < delays.get(host, 0.0):
                found.append(f"{host}: {after['path']} {gap:.4f}s after {before['path']}")
    return found


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=20, help="ordinary hosts beside the SPA hosts")
    parser.add_argument("--pages-per-host", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.05, help="default_delay_s of both crawls")
    parser.add_argument("--auto", action="store_true", help='render_hosts = ["auto"] instead of the SPA hosts')
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
    spa = spa_hosts(web)
    spa_names = {h.hostname for h in spa}
    js_only = {u for h in spa for u in h.js_only}
    delays = host_delays(web, args.delay)
    violations = politeness_violations(rows, delays)
    plain_violations = politeness_violations(plain_rows, delays)
    plain_cpu = plain.cpu_self_s + plain.cpu_children_s
    render_cpu = rendering.cpu_self_s + rendering.cpu_children_s
    plain_ms = 1000 * plain_cpu / max(1, len(plain.ok_urls))
    rendered = len(rendering.rendered)
    unrendered = len(rendering.ok_urls) - len({u for _, u in rendering.rendered} & rendering.ok_urls)
    render_ms = 1000 * (render_cpu - plain_ms / 1000 * unrendered) / max(1, rendered)
    wrongly_rendered = [u for host, u in rendering.rendered if host not in spa_names]
    found = len(js_only & rendering.ok_urls)

    print(f"{'crawl':<8}{'pages':>7}{'js_only':>9}{'rendered':>10}{'cpu_s':>8}{'of it children':>16}{'wall_s':>8}"
          f"{'browser_s':>11}{'browser_req':>13}{'violations':>12}")
    for name, report, bad in (("plain", plain, plain_violations), ("render", rendering, violations)):
        print(f"{name:<8}{len(report.ok_urls):>7}{len(js_only & report.ok_urls):>5}/{len(js_only):<3}"
              f"{len(report.rendered):>10}{report.cpu_self_s + report.cpu_children_s:>8.2f}{report.cpu_children_s:>16.2f}"
              f"{report.wall_s:>8.2f}{report.browser_s:>11.2f}{report.browser_requests:>13}{len(bad):>12}")
    print(f"render/plain CPU per page: {render_ms / max(plain_ms, 1e-9):.0f}x; "
          f"rendered pages of ordinary hosts: {len(wrongly_rendered)}; access log rows: {len(rows)}")
    for line in (violations + plain_violations)[:10]:
        print("  violation:", line)
    print(load_line(load_at_start))
    print(f"render pages={len(rendering.ok_urls)} js_only_found={found} js_only_total={len(js_only)} "
          f"rendered_pages={rendered} plain_cpu_ms_per_page={plain_ms:.2f} render_cpu_ms_per_page={render_ms:.1f} "
          f"render_pages_per_s={rendered / max(rendering.browser_s, 1e-9):.2f} politeness_violations={len(violations)}")
    met = found >= JS_ONLY_GOAL * len(js_only) and not violations and not wrongly_rendered
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
