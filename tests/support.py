"""Helpers shared by the tests (importable as `support`: tests/ is on pytest's pythonpath)."""

from pathlib import Path

from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.demoweb import DemoWeb
from crawl_assets.demoweb import process as demoweb_process
from crawl_assets.resources import CrawlSettingsResource

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
    """The demo web in its own process (crawl_assets.demoweb.process), with the tests' small
    default web; `with DemoWebProcess(...) as server:` gives server.web, server.port, and
    server.stop() returns the access log rows. Every host sends honest validators unless a
    test passes validators="mixed" (then hosts 8 and 9 send none or a lying Last-Modified),
    so a test can expect a 304 for every unchanged page."""

    def __init__(self, **web_args):
        defaults = {"seed": 1, "hosts": 10, "pages_per_host": 20, "validators": "honest"}
        super().__init__(**(defaults | web_args))


def assert_polite(rows: list[dict], delay_s: float, delays_by_host: dict[str, float] | None = None) -> None:
    """Never two requests in flight to one host, never closer than its delay."""
    by_host: dict[str, list[dict]] = {}
    for row in rows:
        by_host.setdefault(row["host"], []).append(row)
    for host, hits in by_host.items():
        hits.sort(key=lambda r: r["start"])
        delay = max(delay_s, (delays_by_host or {}).get(host, 0.0))
        for before, after in zip(hits, hits[1:]):
            assert after["start"] >= before["end"], f"two requests in flight to {host}"
            gap = after["start"] - before["end"]
            assert gap >= delay, f"{host} was asked again after {gap:.4f}s (delay {delay}s)"


def assert_warcio_check_passes(*paths: Path) -> None:
    """`warcio check` (digests, record framing) accepts every file."""
    import subprocess
    import sys

    check = subprocess.run([sys.executable, "-m", "warcio.cli", "check", *map(str, paths)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
