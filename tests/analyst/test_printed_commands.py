"""The commands we print run as printed: the demo summary's and the README's SQL commands
(python -m crawl_assets.sql; a `duckdb` command is not installed by the project)."""

import re
import subprocess

from crawl_assets.crawler.settings import PROJECT_ROOT
from crawl_assets.demo import summary

from conftest import DAY2

PREFIX = ".venv/bin/python -m crawl_assets."


def run_shell(command, env=None):
    return subprocess.run(command, shell=True, cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def test_every_command_the_demo_summary_prints_runs(two_day_crawl):
    text = summary(two_day_crawl.settings.catalog_path, two_day_crawl.root, DAY2, two_day_crawl.access_log)
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith(PREFIX)]
    assert len(commands) >= 2 and "duckdb -readonly" not in text
    for command in commands:
        done = run_shell(command)
        assert done.returncode == 0 and "│" in done.stdout, (command, done.stderr)


def test_the_readme_sql_commands_run_against_the_default_catalog(two_day_crawl, tmp_path):
    import os

    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = re.findall(r"`(\.venv/bin/python -m crawl_assets\.sql [^`]*)`", readme)
    assert commands and "duckdb -readonly" not in readme
    overlay = tmp_path / "where.toml"  # the default catalog is the settings' data_root's
    overlay.write_text(f'[crawl]\ndata_root = "{two_day_crawl.root}"\n')
    env = {**os.environ, "RECRAWL_SETTINGS": str(overlay)}
    for command in commands:
        done = run_shell(command, env)
        assert done.returncode == 0 and "│" in done.stdout, (command, done.stderr)


def test_the_sql_command_names_a_missing_catalog(tmp_path):
    done = run_shell(f"{PREFIX}sql --catalog {tmp_path / 'none.duckdb'} 'SELECT 1'")
    assert done.returncode == 2 and "no catalog at" in done.stderr and "Traceback" not in done.stderr
