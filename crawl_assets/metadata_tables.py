"""Metadata a data team reads in the UI: counts as tables (sortable, not JSON blobs)."""

from __future__ import annotations

from collections.abc import Mapping

from dagster import MetadataValue, TableColumn, TableRecord, TableSchema


def counts_table(counts: Mapping[str, int], name: str) -> MetadataValue:
    """One row per key, largest count first: `name` and `count` columns."""
    schema = TableSchema(columns=[TableColumn(name, "string"), TableColumn("count", "int")])
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return MetadataValue.table([TableRecord({name: str(key), "count": int(n)}) for key, n in rows], schema=schema)
