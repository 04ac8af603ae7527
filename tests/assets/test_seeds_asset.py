import pyarrow.parquet as pq
from dagster import instance_for_test, materialize

from crawl_assets.defs.assets import seeds
from crawl_assets.defs.resources import CrawlSettingsResource
from crawl_assets.storage.layout import seeds_file


def test_bad_seed_lines_are_reported_in_metadata_and_skipped(tmp_path):
    seeds_dir = tmp_path / "seeds"
    seeds_dir.mkdir()
    (seeds_dir / "mine.txt").write_text("http://a.example/\nnot a url\n# comment\nhttps://b.example/x\n")
    resource = CrawlSettingsResource(data_root=str(tmp_path / "data"), seeds_dir=str(seeds_dir))

    with instance_for_test() as instance:
        result = materialize([seeds], instance=instance, resources={"crawl_settings": resource})

    assert result.success
    (event,) = result.get_asset_materialization_events()
    metadata = event.materialization.metadata
    assert metadata["seeds"].value == 2 and metadata["bad_lines"].value == 1
    assert "mine.txt:2" in metadata["bad_lines_detail"].value
    table = pq.read_table(seeds_file(tmp_path / "data")).to_pylist()
    assert [row["url"] for row in table] == ["http://a.example/", "https://b.example/x"]
    assert table[0]["host"] == "a.example" and table[0]["source"] == "mine.txt:1"
