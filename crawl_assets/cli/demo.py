"""`make demo`: serve the bundled demo web on loopback, run one recrawl cycle for today's
partition through Dagster, stop the demo web, and print what the crawl produced.

    python -m crawl_assets.cli.demo [--date YYYY-MM-DD]
"""

import argparse
import datetime as dt
import shlex
import sys
import time
from pathlib import Path

import duckdb

from ..crawler.crawl_errors import CrawlError, print_uncaught_crawl_errors

if __name__ == "__main__":  # the modules below read the settings as they load
    print_uncaught_crawl_errors("demo")

from ..crawler.settings import load_settings
from .cycle import STOPPED, CycleFailed, run_days, today
from .launcher import LaunchError
from demoweb.ordinary.change_model import EPOCH
from demoweb.process import DemoWebProcess, DemoWebStartError

DEMO_PORT = 8471
DEMO_HOSTS = 50
DEMO_SEED = 1

EXAMPLE_QUERIES = [
    "SELECT status_class, count(*) AS pages FROM pages GROUP BY ALL ORDER BY pages DESC;",
    "SELECT target_host, count(DISTINCT source) AS linking_pages FROM links\n"
    "  GROUP BY ALL ORDER BY linking_pages DESC LIMIT 5;",
]


def demo_web(day: int, access_log: Path) -> DemoWebProcess:
    """The demo web in its own process, so it does not share a CPU core's GIL with the crawler."""
    return DemoWebProcess(port=DEMO_PORT, hosts=DEMO_HOSTS, seed=DEMO_SEED, day=day,
                          access_log=access_log)


def sql_command(catalog: Path, query: str) -> str:
    """A shell command that runs `query` on the catalog with the project's own DuckDB."""
    return (f".venv/bin/python -m crawl_assets.analyst.sql --catalog {shlex.quote(str(catalog))} "
            f"{shlex.quote(' '.join(query.split()))}")


def summary(catalog: Path, data_root: Path, date: str, access_log: Path) -> str:
    con = duckdb.connect(str(catalog), read_only=True)
    by_status = con.execute(
        "SELECT coalesce(status::VARCHAR, status_class) AS status, count(*) FROM fetches "
        "WHERE date = ? GROUP BY ALL ORDER BY 1", [date]).fetchall()
    views = [r[0] for r in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()]
    rows = {v: con.execute(f"SELECT count(*) FROM {v}").fetchone()[0] for v in views}
    warcs = sorted((data_root / "warc" / f"date={date}").glob("shard=*/*.warc.gz"))
    log = con.execute(f"""
        WITH r AS (SELECT host, start, "end",
                          lag("end") OVER (PARTITION BY host ORDER BY start) AS prev_end
                   FROM read_parquet('{access_log}'))
        SELECT count(*), count(DISTINCT host), min(start - prev_end) FROM r""").fetchone()
    con.close()
    lines = [f"Recrawl cycle {date}: done", "", "Pages per HTTP status:"]
    lines += [f"  {status:>14}  {n}" for status, n in by_status]
    lines += ["", f"WARC files written: {len(warcs)} ({sum(p.stat().st_size for p in warcs):,} bytes) "
              f"under {data_root / 'warc' / f'date={date}'}"]
    lines += ["", f"Catalog {catalog}:"] + [f"  {v:>10}  {n:,} rows" for v, n in rows.items()]
    lines += ["", f"Demo web access log: {log[0]} requests to {log[1]} hosts, closest two requests "
              f"to one host {log[2] or 0:.3f} s apart ({access_log})"]
    # Commands that run as printed (no `duckdb` command is installed; see crawl_assets/analyst/sql.py).
    lines += ["", "Try it (read-only; docs/CATALOG.md describes every view):"]
    lines += [f"  {sql_command(catalog, q)}" for q in EXAMPLE_QUERIES]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--date", default=today(), help="the day's partition (default: today, UTC)")
    args = parser.parse_args(argv)
    settings = load_settings()
    day = (dt.date.fromisoformat(args.date) - EPOCH.date()).days  # the demo web's own clock
    access_log = settings.data_root / "demoweb" / f"access_log-{args.date}.parquet"
    started = time.monotonic()
    try:
        server = demo_web(day, access_log).start()
    except DemoWebStartError as exc:
        print(f"demo failed: {exc} (is port {DEMO_PORT} busy?)", file=sys.stderr)
        return 1
    print(server.ready_line, flush=True)
    try:
        run_days([args.date], progress=lambda line: print(line, flush=True))
    except (CycleFailed, LaunchError, CrawlError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(STOPPED, file=sys.stderr)
        return 130
    finally:
        server.stop()  # started above (a `with` block would start it a second time)
    print(summary(settings.catalog_path, settings.data_root, args.date, access_log))
    print(f"\n(cycle took {time.monotonic() - started:.1f} s; `make ui` shows the runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
