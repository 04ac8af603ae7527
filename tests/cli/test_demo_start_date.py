"""`make demo` starts its daily partitions on its first day (settings start_date), for its own
runs and for `make ui SETTINGS=settings/demo.toml` after it: the UI then offers the demo's days,
not every day since recrawl.toml's start_date (its plots squeezed three days into the right
edge and called each asset a few per cent filled). Nothing is crawled here."""

import os
import subprocess

from crawl_assets.cli import demo
from crawl_assets.crawler.settings import PROJECT_ROOT, SETTINGS_ENV, load_settings

from support import DEMO_SETTINGS


def test_the_demos_runs_read_its_first_day_as_start_date(tmp_path, monkeypatch):
    overlay = tmp_path / "where.toml"
    overlay.write_text(f'[crawl]\ndata_root = "{tmp_path / "demo"}"\n')
    monkeypatch.setenv(SETTINGS_ENV, f"{DEMO_SETTINGS}:{overlay}")
    seen = {}

    def run_days(days, **_):  # what each Dagster process the demo starts reads
        seen["days"], seen["start_date"] = days, load_settings().start_date
        seen["layers"] = os.environ[SETTINGS_ENV]

    monkeypatch.setattr(demo, "run_days", run_days)
    monkeypatch.setattr(demo, "summary", lambda *args: "")
    assert load_settings().start_date == "2026-11-01"  # recrawl.toml's
    assert demo.main(["--date", "2026-12-05", "--days", "3"]) == 0
    assert seen["days"] == ["2026-12-03", "2026-12-04", "2026-12-05"]
    assert seen["start_date"] == "2026-12-03"
    written = tmp_path / "demo" / demo.START_DATE_FILE
    assert seen["layers"] == f"{DEMO_SETTINGS}:{overlay}:{written}"
    assert load_settings(DEMO_SETTINGS, overlay, written, use_env=False).start_date == "2026-12-03"


def test_make_ui_with_the_demo_settings_reads_the_start_date_the_demo_wrote(tmp_path):
    def ui_settings(settings: str) -> str:
        done = subprocess.run(["make", "-s", "-f", str(PROJECT_ROOT / "Makefile"), "--eval",
                               "show-ui-settings: ; @echo $(UI_SETTINGS)", "show-ui-settings", f"SETTINGS={settings}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert ui_settings("settings/demo.toml") == "settings/demo.toml"  # no demo run yet: nothing to add
    written = tmp_path / "data" / "demo" / demo.START_DATE_FILE
    written.parent.mkdir(parents=True)
    written.write_text('[crawl]\nstart_date = "2026-12-03"\n')
    assert ui_settings("settings/demo.toml") == f"settings/demo.toml:{written}"
    assert ui_settings("mine.toml") == "mine.toml"  # another crawl's settings are left alone
