"""The commands we print run as printed: the demo summary's and the README's SQL commands
(python -m crawl_assets.analyst.sql; a `duckdb` command is not installed by the project), and the
README's two pywb commands."""

import re
import subprocess
from urllib.parse import urlsplit

import duckdb
import httpx

from crawl_assets.cli.demo import summary
from crawl_assets.crawler.settings import PROJECT_ROOT

from conftest import DAY1, DAY2
from pywb_support import free_port, require_pywb, running_wayback

PREFIX = ".venv/bin/python -m crawl_assets.analyst."


def run_shell(command, env=None):
    return subprocess.run(command, shell=True, cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def demo_summary(crawl) -> str:
    return summary(crawl.settings.catalog_path, crawl.root, [DAY1, DAY2], [crawl.access_log])


def test_the_demo_summary_shows_each_days_recrawl_in_aligned_columns(two_day_crawl):
    """One row a day under one heading, every column lined up with its heading: day one
    discovers (all new, no 304), day two answers 304 for what day one saw and counts the bytes
    that saved, and only the session-id trap's pages changed (the web did not); the trap hosts'
    refusals, the near-duplicate groups and the next day's plan are counted."""
    lines = demo_summary(two_day_crawl).splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["day", "fetched"])
    heading, day1, day2 = lines[at:at + 3]
    ends = [m.end() for m in re.finditer(r"\S+(?: \S+)*", heading)]
    assert len(ends) == 10
    for row in (day1, day2):  # each right-aligned number ends where its heading ends
        assert [m.end() for m in re.finditer(r"\S+", row)][1:] == ends[1:], (heading, row)
    one = dict(zip(["fetched", "new", "changed", "304", "same", "saved", "traps", "groups", "planned"],
                   (int(v.replace(",", "")) for v in day1.split()[1:])))
    two = dict(zip(one, (int(v.replace(",", "")) for v in day2.split()[1:])))
    assert day1.split()[0] == DAY1 and day2.split()[0] == DAY2
    assert one["new"] > 50 and one["304"] == one["changed"] == one["saved"] == 0
    assert two["304"] > 50 and two["saved"] > 100_000 and 0 < two["changed"] < 50  # the session-id trap's pages
    assert one["traps"] > 0 and one["groups"] > 0 and one["planned"] > 0


def test_every_command_the_demo_summary_prints_runs(two_day_crawl):
    text = demo_summary(two_day_crawl)
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith(PREFIX)]
    assert len(commands) >= 2 and "duckdb -readonly" not in text
    for command in commands:
        done = run_shell(command)
        assert done.returncode == 0 and "│" in done.stdout, (command, done.stderr)


def test_the_readme_sql_commands_run_against_the_default_catalog(two_day_crawl, tmp_path):
    import os

    readme = (PROJECT_ROOT / "README.md").read_text()
    commands = re.findall(r"`(\.venv/bin/python -m crawl_assets\.analyst\.sql [^`]*)`", readme)
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


def test_the_readme_pywb_commands_replay_the_crawl(two_day_crawl, tmp_path):
    """The README's two pywb lines, run as printed (only the port is a free one) in a folder
    whose data/ is the crawl's data root and whose .tools/ is the project's."""
    require_pywb()
    readme = (PROJECT_ROOT / "README.md").read_text()
    block = re.search(r"Browse a crawl in pywb.*?```sh\n(.*?)```", readme, flags=re.S).group(1)
    add, serve = [line for line in block.splitlines() if line.strip()]
    (tmp_path / ".tools").symlink_to(PROJECT_ROOT / ".tools")
    (tmp_path / "data").symlink_to(two_day_crawl.root)
    done = subprocess.run(add, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    archived = sorted(p.name for p in (tmp_path / "collections" / "crawl" / "archive").iterdir())
    assert archived == sorted(p.name for p in two_day_crawl.warcs())
    serve, hint = serve.split("#")
    assert "-p 8080" in serve and "http://127.0.0.1:8080/crawl/*/URL" in hint
    port = free_port()
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    url, timestamp = con.execute("SELECT url, timestamp FROM captures WHERE warc_type = 'response' "
                                 "AND mime = 'text/html' ORDER BY url, timestamp LIMIT 1").fetchone()
    con.close()
    with running_wayback(serve.replace("-p 8080", f"-p {port}"), tmp_path, port) as base:
        listing = httpx.get(f"{base}/crawl/*/{url}", timeout=15)  # the hint's capture list
        answer = httpx.get(f"{base}/crawl/{timestamp}id_/{url}", timeout=15)
    assert listing.status_code == 200 and url in listing.text
    parts = urlsplit(url)
    assert answer.status_code == 200
    assert answer.content == two_day_crawl.web.respond(parts.hostname, parts.path or "/").body
