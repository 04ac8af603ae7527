"""Metadata a data team reads in the UI: tables (sortable, not JSON blobs), the standard
`dagster/row_count` and `dagster/column_schema` keys of a written table, and pictures. Every
column shown carries its description (column_glossary.py; a count column's, the caller's)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa
from dagster import MetadataValue, TableColumn, TableRecord, TableSchema

from ..pipeline.report.report_step import counts_by, host_tables
from .column_glossary import describe

# Arrow type -> the short type name the UI shows in a column schema.
_TYPE_NAMES = (
    (pa.types.is_string, "string"), (pa.types.is_large_string, "string"), (pa.types.is_boolean, "bool"),
    (pa.types.is_integer, "int"), (pa.types.is_floating, "float"), (pa.types.is_timestamp, "timestamp"),
    (pa.types.is_date, "date"), (pa.types.is_list, "list"), (pa.types.is_binary, "binary"),
)


def counts_table(counts: Mapping[str, int], name: str, count_name: str, *, counted: str) -> MetadataValue:
    """One row per key, largest count first: `name` and `count_name` columns; `counted` says
    what the count column counts."""
    schema = TableSchema(columns=[TableColumn(name, "string", description=describe(name)),
                                  TableColumn(count_name, "int", description=counted)])
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return MetadataValue.table([TableRecord({name: str(key), count_name: int(n)}) for key, n in rows],
                               schema=schema)


def _type_name(arrow_type: pa.DataType) -> str:
    return next((name for test, name in _TYPE_NAMES if test(arrow_type)), str(arrow_type))


def column_schema(schema: pa.Schema, described: Mapping[str, str] | None = None) -> TableSchema:
    """The columns with their types and descriptions (`described`: this table's own, where a
    name's meaning here is narrower than the glossary's)."""
    described = described or {}
    return TableSchema(columns=[TableColumn(field.name, _type_name(field.type),
                                            description=described.get(field.name) or describe(field.name))
                                for field in schema])


def arrow_table(table: pa.Table, described: Mapping[str, str] | None = None) -> MetadataValue:
    """A small Arrow table (a few dozen rows) as a table the UI renders, with its schema."""
    def cell(value):
        return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)

    records = [TableRecord({k: cell(v) for k, v in row.items()}) for row in table.to_pylist()]
    return MetadataValue.table(records, schema=column_schema(table.schema, described))


def table_metadata(table: pa.Table, described: Mapping[str, str] | None = None) -> dict[str, object]:
    """The standard keys of a written table: its rows and its columns."""
    return {"dagster/row_count": table.num_rows, "dagster/column_schema": column_schema(table.schema, described)}


def parquet_metadata(path) -> dict[str, object]:
    """table_metadata of a table streamed to a Parquet file, from the file's footer."""
    from ..storage.shared_root import parquet_file

    footer = parquet_file(path)
    return {"dagster/row_count": footer.metadata.num_rows, "dagster/column_schema": column_schema(footer.schema_arrow)}


DROPPED_URLS = {"urls": "URLs of the host refused for the reason."}
RATE_BAND_URLS = {"urls": "URLs whose estimated change rate is in the band."}


def picture(name: str, path: Path, png: bytes, title: str) -> dict[str, MetadataValue]:
    """A PNG (already written to `path`) shown inline as markdown holding the image, and
    linked by its path for tools that open files."""
    inline = f"![{title}](data:image/png;base64,{base64.b64encode(png).decode()})"
    return {name: MetadataValue.md(inline), f"{name}_png": MetadataValue.path(str(path))}


def fetch_log_metadata(fetch_log: pa.Table) -> dict[str, object]:
    """A fetch batch's log: pages by status class and by HTTP status, the hosts spaced widest
    and answering 429 most, its rows and columns."""
    hosts = host_tables(fetch_log)
    answered = fetch_log.filter(fetch_log["status"].is_valid())
    return {
        "status_classes": counts_table(counts_by(fetch_log, "status_class"), "status_class", "pages",
                                       counted="Fetch-log rows with this outcome."),
        "http_statuses": counts_table(counts_by(answered, "status"), "http_status", "pages",
                                      counted="Answers with this HTTP status."),
        "hosts_widest_spacing": arrow_table(hosts.widest_spacing),
        "hosts_most_429": arrow_table(hosts.most_429),
        **table_metadata(fetch_log),
    }


def dropped_metadata(dropped: pa.Table, top: int = 20) -> dict[str, object]:
    """URLs the trap defences refused: by reason, and the `top` (host, reason) rows that lost most."""
    by_host = dropped.sort_by([("urls", "descending"), ("host", "ascending")]).slice(0, top)
    return {"drop_reasons": counts_table(counts_by(dropped, "reason", "urls"), "reason", "urls",
                                         counted="URLs refused for the reason."),
            "dropped_by_host": arrow_table(by_host, DROPPED_URLS), **table_metadata(dropped, DROPPED_URLS)}
