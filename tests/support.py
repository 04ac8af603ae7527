"""Helpers shared by the tests (importable as `support`: tests/ is on pytest's pythonpath)."""

from pathlib import Path

from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.demoweb import DemoWeb
from crawl_assets.resources import CrawlSettingsResource

DEMO_SETTINGS = PROJECT_ROOT / "settings" / "demo.toml"
TEST_DELAY_S = 0.03


def write_test_settings(folder: Path, web: DemoWeb, extra: str = "",
                        seed_hosts: int | None = None) -> CrawlSettingsResource:
    """Demo settings with a short delay, seeds for `web` (the first `seed_hosts` hosts, or all),
    outputs under `folder`."""
    seeds_dir = folder / "seeds"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    (seeds_dir / "demo.txt").write_text("\n".join(web.seed_urls()[:seed_hosts]) + "\n")
    overlay = folder / "test.toml"
    overlay.write_text(f"[crawl]\ndefault_delay_s = {TEST_DELAY_S}\nmax_pages_per_host = 40\n{extra}")
    return CrawlSettingsResource(settings_files=[str(DEMO_SETTINGS), str(overlay)],
                                 data_root=str(folder / "data"), seeds_dir=str(seeds_dir))
