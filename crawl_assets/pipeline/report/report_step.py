"""Day report step: what a data team reads about a day's crawl, from the day's own outputs.

Figures per shard partition (one fetch log) and per day (every shard's fetch log and dropped
URLs of the day): status classes, drop reasons, the hosts the crawl spaced most widely and the
hosts that answered 429 most, the status mix of every day so far, and which shards are
missing (a partial day). No Dagster here: the assets turn these into metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ...crawler.vocabulary import TLS_FAILURES
from ...storage.layout import dropped_file, fetch_log_file, frontier_file, host_events_file
from ...storage.shared_root import connect, query_connection, read_table
from ..change_stats.url_change_state import has_url_state, register_change_stats, url_state
from ..checks_step import frontier_accounted_for

TOP_HOSTS = 10

# Per host, from the fetch log's own timings: requests answered, 429 answers, and the spacing
# the engine applied (start to start, as the politeness check measures it).
HOSTS_SQL = """
WITH starts AS (
    SELECT host, status,
           (epoch_us(fetched_at) - epoch_us(lag(fetched_at) OVER (PARTITION BY host ORDER BY fetched_at))) / 1e6
               AS since_s
    FROM fetch_log WHERE fetched_at IS NOT NULL
)
SELECT host, count(*)::BIGINT AS requests, count(*) FILTER (WHERE status = 429)::BIGINT AS http_429,
       round(median(since_s), 3) AS median_spacing_s, round(max(since_s), 3) AS max_spacing_s
FROM starts GROUP BY host
"""

STATUS_MIX_SQL = """
SELECT date::VARCHAR AS date, coalesce(status_class, 'none') AS status_class, count(*)::BIGINT AS pages
FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
WHERE date::VARCHAR <= $date
GROUP BY ALL ORDER BY date, status_class
"""


@dataclass(frozen=True)
class HostTables:
    widest_spacing: pa.Table  # host, requests, http_429, median_spacing_s, max_spacing_s
    most_429: pa.Table


def host_tables(fetch_log: pa.Table, top: int = TOP_HOSTS) -> HostTables:
    """The `top` hosts by median applied spacing, and by 429 answers (hosts with none left out)."""
    con = query_connection()
    con.register("fetch_log", fetch_log)
    hosts = con.sql(HOSTS_SQL)
    widest = hosts.filter("median_spacing_s IS NOT NULL").order(
        "median_spacing_s DESC, host").limit(top).to_arrow_table()
    most_429 = hosts.filter("http_429 > 0").order("http_429 DESC, host").limit(top).to_arrow_table()
    con.close()
    return HostTables(widest, most_429)


def counts_by(table: pa.Table, column: str, weight: str | None = None) -> dict[str, int]:
    """Rows (or the sum of `weight`) per value of `column`, null spelled 'none'."""
    if table.num_rows == 0:
        return {}
    grouped = table.group_by(column).aggregate([(weight, "sum")] if weight else [([], "count_all")])
    values = grouped.column(f"{weight}_sum" if weight else "count_all").to_pylist()
    return {str(key) if key is not None else "none": int(n)
            for key, n in zip(grouped.column(column).to_pylist(), values)}


@dataclass(frozen=True)
class DayReport:
    date: str
    shards: tuple[str, ...]  # every shard of the crawl
    landed: tuple[str, ...]  # shards whose fetch batch of the day landed whole (shards_not_landed)
    fetch_log: pa.Table  # every landed shard's rows
    status_classes: dict[str, int]
    drop_reasons: dict[str, int]  # reason -> URLs refused by the trap defences
    hosts: HostTables
    status_mix: pa.Table  # date, status_class, pages: every day up to this one
    why_missing: dict[str, str] = field(default_factory=dict)  # shard -> why it has not landed
    # the day's host events (change_stats' host_events.py: pages of a host changing together),
    # None before change_stats has run for the day
    host_events: pa.Table | None = None

    @property
    def tls_failures(self) -> dict[str, int]:
        """URLs per TLS failure (vocabulary.TLS_FAILURES): certificate problems and failed
        handshakes, counted apart from hosts that refused or never answered the connection."""
        return {name: n for name, n in self.status_classes.items() if name in TLS_FAILURES}

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(s for s in self.shards if s not in self.landed)

    @property
    def partial(self) -> bool:
        return bool(self.missing)


def _read(files: list[Path], columns: str = "*") -> pa.Table | None:
    if not files:
        return None
    return query_connection().sql(f"SELECT {columns} FROM read_parquet($files, union_by_name = true, "
                                  "hive_partitioning = false)",
                                  params={"files": [str(f) for f in files]}).to_arrow_table()


def shards_not_landed(root: Path, date: str, shards: list[str],
                      failed_runs: dict[str, str] | None = None) -> dict[str, str]:
    """shard -> why its fetch batch of `date` has not landed: no fetch log, its latest fetch run
    failed (failed_runs: shard -> that run), or its fetch log does not account for its frontier."""
    failed_runs = failed_runs or {}
    why = {}
    for shard in shards:
        log, frontier = fetch_log_file(root, date, shard), frontier_file(root, date, shard)
        if shard in failed_runs:
            why[shard] = failed_runs[shard]
        elif not log.exists():
            why[shard] = "no fetch log"
        elif frontier.exists():
            verdict = frontier_accounted_for(_read([frontier], "url"), _read([log], "url"))
            if not verdict.passed:
                why[shard] = f"its fetch log lacks {verdict.failures:,} of the frontier's URLs"
    return why


def day_report(root: Path, date: str, shards: list[str], failed_runs: dict[str, str] | None = None) -> DayReport:
    """The day's figures from the files of every shard that landed (failed_runs: shard -> its
    latest fetch run, for each shard whose run failed)."""
    logs = {s: fetch_log_file(root, date, s) for s in shards}
    why_missing = shards_not_landed(root, date, shards, failed_runs)
    landed = tuple(s for s in shards if s not in why_missing)
    fetch_log = _read([logs[s] for s in landed])
    dropped = _read([p for s in landed if (p := dropped_file(root, date, s)).exists()])
    if fetch_log is None:
        fetch_log = pa.table({"host": pa.array([], pa.string()), "status": pa.array([], pa.int32()),
                              "status_class": pa.array([], pa.string()),
                              "fetched_at": pa.array([], pa.timestamp("us", tz="UTC"))})
    every_day = [str(p) for p in sorted(root.glob("fetch_log/date=*/shard=*/*.parquet"))]
    con = query_connection()
    mix = (con.sql(STATUS_MIX_SQL, params={"files": every_day, "date": date}).to_arrow_table() if every_day
           else pa.table({"date": pa.array([], pa.string()), "status_class": pa.array([], pa.string()),
                          "pages": pa.array([], pa.int64())}))
    con.close()
    return DayReport(date=date, shards=tuple(shards), landed=landed, fetch_log=fetch_log,
                     status_classes=counts_by(fetch_log, "status_class"),
                     drop_reasons=counts_by(dropped, "reason", "urls") if dropped is not None else {},
                     hosts=host_tables(fetch_log), status_mix=mix, why_missing=why_missing,
                     host_events=day_host_events(root, date))


def day_host_events(root: Path, date: str) -> pa.Table | None:
    """The hosts whose pages change_stats saw changing together on the day (host, pages moved,
    revisits, share, events so far, events a day), most pages first."""
    path = host_events_file(root, date)
    if not path.exists():
        return None
    events = read_table(path)
    events = events.filter(events["day_event"])
    return events.select(["host", "last_event_pages", "last_event_revisits", "last_event_share", "events",
                          "event_rate"]).rename_columns(["host", "pages_moved", "revisits", "share", "events",
                                                         "events_a_day"]).sort_by([("pages_moved", "descending"),
                                                                                   ("host", "ascending")])


def missing_shards_text(report: DayReport) -> str:
    """The shards that have not landed, each with why: "s01 (run 1234abcd: failure), s03 (no fetch log)"."""
    return ", ".join(f"{s} ({report.why_missing[s]})" if s in report.why_missing else s for s in report.missing)


def day_report_table(report: DayReport, fetch_numbers: Mapping[str, int | float]) -> pa.Table:
    """The day in one row, the report's own table (day_report/date=D/day_report.parquet):
    whether it is partial and why, and its key figures (day_figures.py)."""
    return pa.Table.from_pylist([{
        "date": report.date, "partial": report.partial, "shards_landed": len(report.landed),
        "missing_shards": missing_shards_text(report) or "none", **fetch_numbers,
        "tls_failures": sum(report.tls_failures.values())}])


def summary_markdown(report: DayReport) -> str:
    """A few lines on the day: pages, status mix, what was refused, and a partial day's gaps."""
    pages = sum(report.status_classes.values())
    lines = [f"## Crawl of {report.date}", ""]
    if report.partial:
        gaps = missing_shards_text(report)
        lines.append(f"**Partial day**: {len(report.landed)} of {len(report.shards)} shards landed; "
                     f"missing: {gaps}. Everything downstream ran on what landed.")
    else:
        lines.append(f"All {len(report.shards)} shards landed.")
    lines += ["", f"- {pages:,} fetch-log rows from {len(pc.unique(report.fetch_log.column('host'))):,} hosts"]
    lines += [f"- {name}: {n:,} ({n / pages:.1%})" for name, n in
              sorted(report.status_classes.items(), key=lambda kv: -kv[1])] if pages else []
    tls = report.tls_failures
    if tls:
        kinds = ", ".join(f"{name} {n:,}" for name, n in sorted(tls.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"- {sum(tls.values()):,} URLs lost to TLS failures ({kinds})")
    refused = sum(report.drop_reasons.values())
    if refused:
        top = ", ".join(f"{r} {n:,}" for r, n in sorted(report.drop_reasons.items(), key=lambda kv: -kv[1])[:3])
        lines.append(f"- {refused:,} discovered URLs refused by the trap defences ({top})")
    most_429 = report.hosts.most_429
    if most_429.num_rows:
        lines.append(f"- {most_429.num_rows} host(s) answered 429; most: {most_429['host'][0]} "
                     f"({most_429['http_429'][0]})")
    events = report.host_events
    if events is not None and events.num_rows:
        top = ", ".join(f"{h} ({m} of {r} revisited)" for h, m, r in
                        zip(*(events[c].to_pylist()[:3] for c in ("host", "pages_moved", "revisits"))))
        lines.append(f"- {events.num_rows} host event(s), pages of one host changing together: {top}; "
                     "the hosts' other pages are due")
    return "\n".join(lines)


def change_rates(root: Path, date: str) -> pa.Array | None:
    """Every URL's estimated changes a day from the day's change_stats, None before it exists."""
    if not has_url_state(root, date):
        return None
    con = connect()
    register_change_stats(con, url_state(root, date))
    return con.sql("SELECT change_rate FROM change_stats").to_arrow_table().column("change_rate")
