"""Helpers shared by the tests (importable as `support`: tests/ is on pytest's pythonpath)."""

from collections import defaultdict
from pathlib import Path

from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.defs.resources import CrawlSettingsResource
from demoweb import DemoWeb
from demoweb import process as demoweb_process

DEMO_SETTINGS = PROJECT_ROOT / "settings" / "demo.toml"
TEST_DELAY_S = 0.03


def write_test_settings(folder: Path, web: DemoWeb, extra: str = "",
                        seed_hosts: int | None = None) -> CrawlSettingsResource:
    """Demo settings with a short delay, seeds for `web` (the first `seed_hosts` hosts, or all),
    outputs under `folder`."""
    seeds_dir = folder / "seeds"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    seeds = web.seed_urls()[:seed_hosts] + [t.home for t in web.trap_hosts()] + web.near_duplicate_homes()
    (seeds_dir / "demo.txt").write_text("\n".join(seeds) + "\n")
    overlay = folder / "test.toml"
    overlay.write_text(f"[crawl]\ndefault_delay_s = {TEST_DELAY_S}\nmax_pages_per_host = 40\n{extra}")
    return CrawlSettingsResource(settings_files=[str(DEMO_SETTINGS), str(overlay)],
                                 data_root=str(folder / "data"), seeds_dir=str(seeds_dir))


class DemoWebProcess(demoweb_process.DemoWebProcess):
    """The demo web in its own process (demoweb.process), with the tests' small
    default web; `with DemoWebProcess(...) as server:` gives server.web, server.port, and
    server.stop() returns the access log rows. Every host sends honest validators unless a
    test passes validators="mixed" (then hosts 8 and 9 send none or a lying Last-Modified),
    so a test can expect a 304 for every unchanged page."""

    def __init__(self, **web_args):
        defaults = {"seed": 1, "hosts": 10, "pages_per_host": 20, "validators": "honest"}
        super().__init__(**(defaults | web_args))


def requests_by_host(rows: list[dict]) -> dict[str, list[dict]]:
    """The demo web's access log rows, each host's in the order they started (a host never
    asked has none)."""
    log: dict[str, list[dict]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: r["start"]):
        log[row["host"]].append(row)
    return log


def assert_polite(rows: list[dict], delay_s: float, delays_by_host: dict[str, float] | None = None,
                  *, response_time_factor: float = 0.0, max_adaptive_delay_s: float = float("inf"),
                  retry_after=None) -> None:
    """Never two requests in flight to one host, and never a request sooner after the answer
    before it than the host's delay, which is the largest of:
    - `delay_s`, and the host's `delays_by_host` entry (its robots.txt Crawl-delay);
    - with `response_time_factor` (the crawl's setting), the adaptive delay: at least the
      factor x the host's fastest answer so far, up to `max_adaptive_delay_s`. The crawler's
      average of recent response times is never below its fastest, and a row's end - start
      (request received to answer handed to the socket) is never more than the crawler
      measures, so this is a bound it must meet. Rows with status 0 (never answered) were
      not measured and are skipped;
    - with `retry_after` (a function of a row: the time.time() moment before which the host
      must not be asked again after that answer, or None), the next request comes no sooner.
    """
    by_host: dict[str, list[dict]] = {}
    for row in rows:
        by_host.setdefault(row["host"], []).append(row)
    for host, hits in by_host.items():
        hits.sort(key=lambda r: r["start"])
        delay = max(delay_s, (delays_by_host or {}).get(host, 0.0))
        fastest = None
        for before, after in zip(hits, hits[1:]):
            assert after["start"] >= before["end"], f"two requests in flight to {host}"
            gap = after["start"] - before["end"]
            assert gap >= delay, (f"{host} was asked again after {gap:.4f}s (delay {delay}s): "
                                  f"{before['path']} ({before['status']}) then {after['path']}")
            if before["status"] and response_time_factor:
                took = before["end"] - before["start"]
                fastest = took if fastest is None else min(fastest, took)
                adaptive = min(response_time_factor * fastest, max_adaptive_delay_s)
                assert gap >= adaptive, (f"{host} was asked again after {gap:.4f}s; its answers took "
                                         f">= {fastest:.4f}s, so the adaptive delay is >= {adaptive:.4f}s")
            moment = retry_after(before) if retry_after else None
            if moment is not None:
                early = moment - after["start"]
                assert early <= 0, (f"{host} was asked again {early:.4f}s before the Retry-After of "
                                    f"its {before['status']} to {before['path']}")


def assert_warcio_check_passes(*paths: Path) -> None:
    """`warcio check` (digests, record framing) accepts every file."""
    import subprocess
    import sys

    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", *map(str, paths)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
