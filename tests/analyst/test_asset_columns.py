"""What the UI shows of the assets' tables (on the two-day demo crawl's materializations):
every column of every column schema and metadata table carries a description, and day_report's
column schema is its own table's (day_report/date=D/day_report.parquet, one row a day), not the
fetch log's."""

import pyarrow.parquet as pq
from dagster import TableMetadataValue, TableSchemaMetadataValue

from crawl_assets.defs.column_glossary import COLUMNS
from crawl_assets.storage.layout import day_report_dir

from conftest import DAY2


def shown_tables(metadata: dict) -> dict[str, object]:
    """Metadata key -> TableSchema of every table an asset's metadata shows."""
    tables = {}
    for key, value in metadata.items():
        if isinstance(value, TableSchemaMetadataValue):
            tables[key] = value.schema
        elif isinstance(value, TableMetadataValue):
            tables[key] = value.schema
    return tables


def test_every_column_the_ui_shows_has_a_description(two_day_crawl):
    undescribed = []
    shown = 0
    for asset, metadata in two_day_crawl.metadata.items():
        for key, schema in shown_tables(metadata).items():
            for column in schema.columns:
                shown += 1
                if not (column.description or "").strip():
                    undescribed.append(f"{asset} {key} {column.name}")
    assert shown > 80 and undescribed == []
    for asset in ("fetch_log", "links", "dropped_urls", "change_evidence", "url_registry", "recrawl_priorities",
                  "day_report", "change_stats"):
        assert shown_tables(two_day_crawl.metadata[asset]), asset


def test_day_reports_columns_are_its_own_tables(two_day_crawl):
    metadata = two_day_crawl.metadata["day_report"]
    schema = metadata["dagster/column_schema"].schema
    table = pq.read_table(day_report_dir(two_day_crawl.root, DAY2) / "day_report.parquet")
    assert [c.name for c in schema.columns] == table.column_names
    assert table.num_rows == 1 == metadata["dagster/row_count"].value
    assert {"pages_fetched", "not_modified", "bytes_saved", "partial"} <= set(table.column_names)
    assert "warc_offset" not in table.column_names  # the fetch log's
    row = table.to_pylist()[0]
    assert row["date"] == DAY2 and row["partial"] is False
    # the figures are numbers on the asset too: the asset page's Plots draw them across days
    assert metadata["pages_fetched"].value == row["pages_fetched"] > 0
    assert metadata["not_modified"].value == row["not_modified"] > 0
    assert {c.name: c.description for c in schema.columns}["bytes_saved"] == COLUMNS["bytes_saved"]
