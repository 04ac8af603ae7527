"""`make demo`: serve the bundled demo web on loopback, crawl several days of it through
Dagster (the web's pages change between days as its change model says), stop the demo web, and
print what each day's recrawl did: pages fetched, new, changed, unchanged, bytes saved, trap
URLs refused, near-duplicate groups and the plan for the next day.

    python -m crawl_assets.cli.demo [--date YYYY-MM-DD] [--days N]

The demo starts over in its own data root (settings/demo.toml: data/demo), so it can be run
again on the same day; a real crawl's data/ is not touched.
"""

import argparse
import datetime as dt
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import duckdb

from ..crawler.crawl_errors import CrawlError, CrawlInputError, print_uncaught_crawl_errors

if __name__ == "__main__":  # the modules below read the settings as they load
    print_uncaught_crawl_errors("demo")

from ..crawler.settings import PROJECT_ROOT, SETTINGS_ENV, load_settings
from ..pipeline.report.day_figures import DayFigures, day_figures
from .cycle import STOPPED, CycleFailed, run_days, today
from .launcher import LaunchError
from demoweb.ordinary.change_model import EPOCH
from demoweb.process import DemoWebProcess, DemoWebStartError

DEMO_PORT = 8471
DEMO_DAYS = 3  # a first day of discovery, then two of recrawl (about 4 minutes on two cores)
DEMO_ROOT_NAME = "demo"  # the demo clears its data root only if the folder has this name
# Written in the demo's data root: [crawl] start_date = the demo's first day, laid on the demo's
# settings for its own Dagster runs, and by `make ui SETTINGS=settings/demo.toml` (Makefile), so
# the UI's daily partitions are the demo's days, not every day since recrawl.toml's start_date.
START_DATE_FILE = "start_date.toml"
# The demo web: 30 ordinary hosts of 30 pages (data/seeds/demo/demo.txt), small enough for the
# first day to find every page (max_pages_per_host is 40), so the next days recrawl rather than
# discover; its trap and near-duplicate hosts (special_hosts.txt) and its script-only hosts
# (spa_hosts.txt), which the render tier learns to render (settings/demo.toml: render_hosts = auto).
DEMO_WEB = {"hosts": 30, "pages_per_host": 30, "seed": 1, "traps": True, "near_duplicates": True, "spa": True}

EXAMPLE_QUERIES = [
    "SELECT date, count(*) AS records, count(*) FILTER (WHERE warc_type = 'revisit') AS revisits "
    "FROM captures GROUP BY date ORDER BY date;",
    "SELECT representative, cluster_size, count(*) AS urls FROM near_duplicates WHERE cluster_size > 1 "
    "GROUP BY ALL ORDER BY urls DESC LIMIT 5;",
]

# The per-day table: (heading, what it shows of a day's figures).
COLUMNS = [
    ("day", lambda f: f.date),
    ("fetched", lambda f: f.pages_fetched),
    ("new", lambda f: f.new_urls),
    ("changed", lambda f: f.changed),
    ("304", lambda f: f.not_modified),
    ("same", lambda f: f.identical),
    ("bytes saved", lambda f: f.bytes_saved),
    ("trap URLs refused", lambda f: f.trap_refusals),
    ("near-dup groups", lambda f: f.near_duplicate_groups),
    ("planned next day", lambda f: f.planned_for_tomorrow),
]
LEGEND = ("fetched: answered requests; new: first full answer of a URL; changed: a new payload; "
          "304 and same: unchanged (Not Modified, or the same payload again); bytes saved: by the 304s")


class DemoWebDays:
    """The demo web, served afresh for each crawl day as its change model has it on that day."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.server: DemoWebProcess | None = None
        self.access_logs: list[Path] = []

    def serve(self, date: str) -> None:
        self.stop()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        access_log = self.log_dir / f"access_log-{date}.parquet"
        day = (dt.date.fromisoformat(date) - EPOCH.date()).days  # the demo web's own clock
        self.server = DemoWebProcess(port=DEMO_PORT, day=day, access_log=access_log, **DEMO_WEB).start()
        self.access_logs.append(access_log)
        print(f"{date}: {self.server.ready_line}", flush=True)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def sql_command(catalog: Path, query: str) -> str:
    """A shell command that runs `query` on the catalog with the project's own DuckDB."""
    return (f".venv/bin/python -m crawl_assets.analyst.sql --catalog {shlex.quote(str(catalog))} "
            f"{shlex.quote(' '.join(query.split()))}")


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows of cells as lines: the first column left-aligned, the others right-aligned, every
    column as wide as its widest cell (a long name moves the column, not the row)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                             for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows]


def cell(value) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def figures_lines(days: list[DayFigures]) -> list[str]:
    return aligned([[heading for heading, _ in COLUMNS]] + [[cell(get(f)) for _, get in COLUMNS] for f in days])


# Fetch-log rows with an HTTP answer, by status; and those without one, by what happened instead.
ANSWERED_SQL = "SELECT status::VARCHAR, count(*) FROM fetches WHERE status IS NOT NULL GROUP BY ALL ORDER BY 2 DESC, 1"
UNANSWERED_SQL = "SELECT status_class, count(*) FROM fetches WHERE status IS NULL GROUP BY ALL ORDER BY 2 DESC, 1"
# The rendered page the demo shows with `captures show`: the first by URL.
RENDERED_PAGE_SQL = "SELECT min(url) FROM fetches WHERE rendered"


def summary(catalog: Path, data_root: Path, dates: list[str], access_logs: list[Path]) -> str:
    con = duckdb.connect(str(catalog), read_only=True)
    answered, unanswered = con.execute(ANSWERED_SQL).fetchall(), con.execute(UNANSWERED_SQL).fetchall()
    log = con.execute("SELECT count(*), count(DISTINCT host) FROM read_parquet($logs)",
                      {"logs": [str(p) for p in access_logs]}).fetchone()
    con.close()
    warcs = sorted((data_root / "warc").glob("date=*/shard=*/*.warc.gz"))
    lines = [f"Recrawl of the demo web, {len(dates)} days ({dates[0]} .. {dates[-1]}): done", ""]
    lines += figures_lines([day_figures(data_root, date) for date in dates])
    lines += [f"  ({LEGEND})", "", "Answers per HTTP status, every day:"]
    lines += aligned([[status, f"{n:,}"] for status, n in answered])
    if unanswered:
        lines += ["", "Requests without an answer, by reason (refused before asking, or no answer came), every day:"]
        lines += aligned([[reason, f"{n:,}"] for reason, n in unanswered])
    lines += ["", f"WARC files: {len(warcs)} ({sum(p.stat().st_size for p in warcs):,} bytes) under "
              f"{data_root / 'warc'}; the demo web answered {log[0]:,} requests to {log[1]} hosts"]
    lines += render_lines(catalog)
    lines += ["", f"Try it (read-only; docs/CATALOG.md describes every view of {catalog}):"]
    lines += [f"  {command}" for command in try_it(catalog, data_root)]
    return "\n".join(lines)


def try_it(catalog: Path, data_root: Path) -> list[str]:
    """Commands that run as printed from the checkout (no `duckdb` command is installed; see
    crawl_assets/analyst/sql.py): SQL, a rendered page's DOM when the demo rendered one, and
    pywb over the demo's WARC files (installed by `make replay-tools` first, a no-op once done;
    a collection in the demo's data root, which the next demo clears)."""
    commands = [sql_command(catalog, q) for q in EXAMPLE_QUERIES]
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        (rendered,) = con.execute(RENDERED_PAGE_SQL).fetchone()
    except duckdb.Error:  # no fetches view: nothing fetched
        rendered = None
    finally:
        con.close()
    if rendered:
        captures = f".venv/bin/python -m crawl_assets.analyst.captures --catalog {shlex.quote(str(catalog))}"
        commands += [f"{captures} show {shlex.quote(rendered)}   # the DOM the browser rendered; --shell: the HTML sent",
                     f"{captures} list {shlex.quote(rendered)}"]
    pywb, root = PROJECT_ROOT / ".tools" / "pywb" / "bin", shlex.quote(str(data_root))
    commands += [f"make replay-tools && (cd {root} && {pywb / 'wb-manager'} init demo && {pywb / 'wb-manager'} add demo "
                 "warc/date=*/shard=*/*.warc.gz)",
                 f"(cd {root} && {pywb / 'wayback'} -b 127.0.0.1 -p 8080)   # then http://127.0.0.1:8080/demo/*/URL"]
    return commands


RENDER_SQL = """
SELECT d.date::VARCHAR, d.host, d.decision, d.pages_sampled, d.plain_links, d.rendered_links,
       d.plain_text_chars, d.rendered_text_chars, count(f.url) AS rendered_pages
FROM render_decisions AS d
LEFT JOIN fetches AS f ON f.host = d.host AND f.date = d.date AND f.rendered
WHERE d.decision IS NOT NULL
GROUP BY ALL ORDER BY 1, 2
"""


def render_lines(catalog: Path) -> list[str]:
    """The render tier's decisions (catalog view render_decisions), with the pages rendered; none
    when nothing was considered for rendering."""
    con = duckdb.connect(str(catalog), read_only=True)
    try:
        rows = con.execute(RENDER_SQL).fetchall()
    except duckdb.CatalogException:  # no render tier in this crawl
        rows = []
    finally:
        con.close()
    if not rows:
        return []
    heading = ["day", "host", "decision", "sampled", "links plain > rendered", "text plain > rendered", "rendered"]
    cells = [[day, host, decision, cell(n), f"{pl} > {rl}", f"{pt:,} > {rt:,}", cell(rendered)]
             for day, host, decision, n, pl, rl, pt, rt, rendered in rows]
    return ["", "Rendered in the browser (render_decisions: hosts whose pages looked script-built, decided on a "
                "rendered sample):"] + aligned([heading] + cells)


def demo_days(last: str, count: int) -> list[str]:
    end = dt.date.fromisoformat(last)
    return [(end - dt.timedelta(days=n)).isoformat() for n in reversed(range(count))]


def start_over(data_root) -> None:
    """The demo's days end today, so an earlier demo's files would be newer days: clear them."""
    if not isinstance(data_root, Path) or data_root.name != DEMO_ROOT_NAME:
        raise CrawlInputError(f"the demo clears its data root, and {data_root} is not a folder named "
                              f"{DEMO_ROOT_NAME!r}: run it with RECRAWL_SETTINGS=settings/demo.toml (make demo)")
    shutil.rmtree(data_root, ignore_errors=True)


def start_on(first_day: str, data_root: Path) -> Path:
    """Write the demo's START_DATE_FILE into its data root and lay it on this process's settings
    (RECRAWL_SETTINGS, which the Dagster processes it starts inherit); returns the file."""
    overlay = data_root / START_DATE_FILE
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text(f'# Written by `make demo`: its daily partitions start on its first day.\n'
                       f'[crawl]\nstart_date = "{first_day}"\n')
    layers = [p for p in os.environ.get(SETTINGS_ENV, "").split(":") if p and Path(p).name != START_DATE_FILE]
    os.environ[SETTINGS_ENV] = ":".join([*layers, str(overlay)])
    return overlay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--date", default=today(), help="the last day's partition (default: today, UTC)")
    parser.add_argument("--days", type=int, default=DEMO_DAYS, help=f"days to crawl (default {DEMO_DAYS})")
    args = parser.parse_args(argv)
    settings = load_settings()
    dates = demo_days(args.date, max(args.days, 1))
    started = time.monotonic()
    web = DemoWebDays(settings.data_root / "demoweb")
    try:
        start_over(settings.data_root)
        start_on(dates[0], settings.data_root)
        run_days(dates, progress=lambda line: print(line, flush=True), before_day=web.serve)
    except DemoWebStartError as exc:
        print(f"demo failed: {exc} (is port {DEMO_PORT} busy?)", file=sys.stderr)
        return 1
    except (CycleFailed, LaunchError, CrawlError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        return 130
    finally:
        web.stop()
    print(summary(settings.catalog_path, settings.data_root, dates, web.access_logs))
    print(f"\n(the demo took {time.monotonic() - started:.0f} s; `make ui SETTINGS=settings/demo.toml` shows its runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
