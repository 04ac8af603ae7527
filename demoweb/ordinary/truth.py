"""The true change history of the ordinary site, for tests and benchmarks that estimate it.

    rows = truth_rows(DemoWeb(hosts=50, day=90))          # list[PageTruth], one per page URL
    table = truth_table(web)                              # the same as a pyarrow.Table
    python -m demoweb truth --day 90 [--hosts 50 --pages-per-host 300 --seed 1]
        [--output truth.csv | truth.parquet] [--format csv|parquet]

One row per page of every generated host (home, /p/ pages, private pages where the host has
them), in host and page order. Columns:
  url                   absolute URL, with the web's port
  host                  hostname
  rate_per_day          the true rate of content changes (Poisson), 0.0 for pages that never change
  versions              content changes up to the web's day (0: still the original text)
  boilerplate_changes   changes of the view counter only, which are not changes of the page
  last_change           the instant of the last content change (UTC timestamp), null if none
  last_change_day       the same in days since EPOCH (2026-01-01), null if none
  validators            'honest', 'none' or 'lying' (host_traits.py)
CSV writes timestamps as ISO 8601 and nulls as empty fields.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import astuple, dataclass, fields
from datetime import datetime
from pathlib import Path

from .change_model import moment
from .host_traits import validator_policy
from .site_shape import HOME_PAGE, PRIVATE_PAGES


@dataclass(frozen=True)
class PageTruth:
    url: str
    host: str
    rate_per_day: float
    versions: int
    boilerplate_changes: int
    last_change: datetime | None
    last_change_day: float | None
    validators: str


COLUMNS = tuple(f.name for f in fields(PageTruth))


def truth_rows(web) -> list[PageTruth]:
    """Every page of every generated host of `web`, as it is at web.day."""
    rows = []
    for h in range(web.hosts):
        host, policy = web.hostname(h), validator_policy(h, web.validators)
        pages: list[int | str] = [HOME_PAGE, *range(web.pages_per_host)]
        if web.private_urls(h):
            pages += [f"/private/{k}.html" for k in range(PRIVATE_PAGES)]
        for page in pages:
            state = web.page_state(h, page)
            path = page if isinstance(page, str) else web.page_path(page)
            last = state.last_change
            rows.append(PageTruth(web.base_url(h) + path, host, state.rate, state.versions,
                                  state.boilerplate_changes, None if last is None else moment(last),
                                  last, policy))
    return rows


def truth_table(web):
    """truth_rows(web) as a pyarrow.Table (pyarrow is imported only when needed)."""
    import pyarrow as pa

    schema = pa.schema([("url", pa.string()), ("host", pa.string()), ("rate_per_day", pa.float64()),
                        ("versions", pa.int64()), ("boilerplate_changes", pa.int64()),
                        ("last_change", pa.timestamp("s", tz="UTC")), ("last_change_day", pa.float64()),
                        ("validators", pa.string())])
    columns = list(zip(*(astuple(r) for r in truth_rows(web)))) or [[] for _ in COLUMNS]
    return pa.Table.from_arrays([pa.array(c, type=schema.field(i).type) for i, c in enumerate(columns)],
                                schema=schema)


def write_truth(web, output: str | Path | None, fmt: str | None = None) -> int:
    """Write the truth as CSV (to stdout when output is None) or Parquet; the row count.
    fmt defaults to the output's suffix ('.parquet' -> parquet, else csv)."""
    fmt = fmt or ("parquet" if output is not None and str(output).endswith(".parquet") else "csv")
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"truth format must be csv or parquet, not {fmt!r}")
    if fmt == "parquet":
        if output is None:
            raise ValueError("Parquet truth needs --output FILE.parquet")
        import pyarrow.parquet as pq

        table = truth_table(web)
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, output)
        return table.num_rows
    rows = truth_rows(web)
    handle = sys.stdout if output is None else open(output, "w", newline="", encoding="utf-8")
    try:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow(["" if v is None else v.isoformat() if isinstance(v, datetime) else v
                             for v in astuple(row)])
    finally:
        if output is not None:
            handle.close()
    return len(rows)
