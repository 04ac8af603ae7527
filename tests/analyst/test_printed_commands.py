"""The commands we print run as printed: the demo summary's and the README's SQL commands
(python -m crawl_assets.analyst.sql; a `duckdb` command is not installed by the project), and the
README's two pywb commands."""

import dataclasses
import re
import shutil
import subprocess
from urllib.parse import urlsplit

import duckdb
import httpx
import pytest

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
    # pywb over the demo's WARC files: a collection in its data root
    require_pywb()
    (add,) = [line.strip() for line in text.splitlines() if "wb-manager init demo" in line]
    (serve,) = [line.strip() for line in text.splitlines() if "wayback -b 127.0.0.1 -p 8080" in line]
    assert add.startswith(f"make replay-tools && (cd {two_day_crawl.root} && ")  # run in the project root
    assert serve.startswith(f"(cd {two_day_crawl.root} && ")
    collection = two_day_crawl.root / "collections"
    try:
        done = run_shell(add)
        assert done.returncode == 0, done.stdout + done.stderr
        assert sorted(p.name for p in (collection / "demo" / "archive").iterdir()) == sorted(
            p.name for p in two_day_crawl.warcs())
    finally:
        shutil.rmtree(collection, ignore_errors=True)


def test_the_demo_labels_say_what_they_count(two_day_crawl):
    """Answers per HTTP status hold HTTP statuses; what got no answer (a robots.txt refusal, a
    timeout) is counted under its own heading, by reason."""
    lines = demo_summary(two_day_crawl).splitlines()
    at = lines.index("Answers per HTTP status, every day:")
    answers = lines[at + 1:lines.index("", at)]
    assert answers and all(re.fullmatch(r"\s+[1-5]\d\d\s+[\d,]+", line) for line in answers), answers
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    unanswered = dict(con.execute("SELECT status_class, count(*) FROM fetches WHERE status IS NULL GROUP BY ALL").fetchall())
    assert unanswered  # the demo web's robots.txt refusals at least
    at = next(i for i, line in enumerate(lines) if line.startswith("Requests without an answer, by reason"))
    rows = [line.split() for line in lines[at + 1:lines.index("", at)]]
    assert {reason: int(n.replace(",", "")) for reason, n in rows} == unanswered


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


def readme_pywb_blocks() -> list[tuple[str, str]]:
    """The README's pywb blocks (after `make demo`, after a crawl): each one's add and serve lines."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    section = re.search(r"Browse a crawl in pywb(.*?)More commands:", readme, flags=re.S).group(1)
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [tuple(line for line in block.splitlines() if line.strip()) for block in blocks]


@pytest.mark.parametrize("after", ["make demo", "a crawl"])
def test_the_readme_pywb_commands_replay_the_crawl(two_day_crawl, tmp_path, after):
    """The README's two pywb lines of each case, run as printed (only the port is a free one)
    in a folder laid out as the checkout is after it: data/demo/warc (a copy of the crawl's
    WARC files) or data/ (the crawl's root), and the project's .tools/."""
    require_pywb()
    demo, crawl = readme_pywb_blocks()
    add, serve = demo if after == "make demo" else crawl
    # the install step first (a no-op once pywb is there, as require_pywb made sure): here, in
    # a folder without the project's Makefile, the rest of the line runs as printed
    assert add.startswith("make replay-tools && ")
    add = add.removeprefix("make replay-tools && ")
    (tmp_path / ".tools").symlink_to(PROJECT_ROOT / ".tools")
    if after == "make demo":
        shutil.copytree(two_day_crawl.root / "warc", tmp_path / "data" / "demo" / "warc")
        collection, served_from = "demo", tmp_path / "data" / "demo"
    else:
        (tmp_path / "data").symlink_to(two_day_crawl.root)
        collection, served_from = "crawl", tmp_path
    done = subprocess.run(add, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    archived = sorted(p.name for p in (served_from / "collections" / collection / "archive").iterdir())
    assert archived == sorted(p.name for p in two_day_crawl.warcs())
    serve, hint = serve.split("#")
    assert "-p 8080" in serve and f"http://127.0.0.1:8080/{collection}/*/URL" in hint
    port = free_port()
    con = duckdb.connect(str(two_day_crawl.settings.catalog_path), read_only=True)
    url, timestamp = con.execute("SELECT url, timestamp FROM captures WHERE warc_type = 'response' "
                                 "AND mime = 'text/html' ORDER BY url, timestamp LIMIT 1").fetchone()
    con.close()
    with running_wayback(serve.replace("-p 8080", f"-p {port}"), tmp_path, port) as base:
        listing = httpx.get(f"{base}/{collection}/*/{url}", timeout=15)  # the hint's capture list
        answer = httpx.get(f"{base}/{collection}/{timestamp}id_/{url}", timeout=15)
    assert listing.status_code == 200 and url in listing.text
    parts = urlsplit(url)
    assert answer.status_code == 200
    assert answer.content == two_day_crawl.web.respond(parts.hostname, parts.path or "/").body


def point_the_tools_at(monkeypatch, tmp_path, demo_root):
    """Default settings whose data root holds no catalog, and a demo whose data root is
    `demo_root`; no RECRAWL_SETTINGS (as after `make demo` on a fresh clone)."""
    from crawl_assets.analyst import catalog_location

    monkeypatch.delenv("RECRAWL_SETTINGS", raising=False)
    real = catalog_location.load_settings
    empty = tmp_path / "data"
    monkeypatch.setattr(catalog_location, "load_settings",
                        lambda *files, **kw: dataclasses.replace(real(*files, **kw), data_root=empty)
                        if not files else real(*files, **kw))
    demo = tmp_path / "demo.toml"
    demo.write_text(f'[crawl]\ndata_root = "{demo_root}"\n')
    monkeypatch.setattr(catalog_location, "DEMO_SETTINGS_FILE", demo)
    return empty / "crawl.duckdb"


def test_without_a_catalog_of_their_own_the_tools_read_the_demos_and_say_so(two_day_crawl, tmp_path, monkeypatch,
                                                                          capsys):
    from crawl_assets.analyst import captures, sql

    missing = point_the_tools_at(monkeypatch, tmp_path, two_day_crawl.root)
    assert sql.main(["SELECT count(*) AS fetches FROM fetches"]) == 0
    out, err = capsys.readouterr()
    assert "│" in out and "fetches" in out
    assert err.startswith(f"sql: no catalog at {missing}: reading the demo's {two_day_crawl.settings.catalog_path} "
                          "(`make demo` wrote it); pass --catalog ROOT/crawl.duckdb")
    seed = min((two_day_crawl.settings.seeds_dir / "demo.txt").read_text().split())
    assert captures.main(["list", seed]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"2 capture(s) of {seed}") and err.startswith("captures: no catalog at ")


def test_with_no_catalog_anywhere_the_message_names_where_it_looked_and_how_to_point_at_a_root(tmp_path, monkeypatch,
                                                                                               capsys):
    from crawl_assets.analyst import sql

    missing = point_the_tools_at(monkeypatch, tmp_path, tmp_path / "demo")
    assert sql.main(["SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert f"no catalog at {missing} (the catalog of the settings: recrawl.toml)" in err
    assert f"nor at {tmp_path / 'demo' / 'crawl.duckdb'} (the demo's)" in err
    assert "pass --catalog ROOT/crawl.duckdb, or name a settings file whose data_root is the root in RECRAWL_SETTINGS" in err
    assert "Traceback" not in err
