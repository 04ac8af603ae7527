"""The settings resource: a run may override settings, but not the shard count the fetch
partitions were loaded with."""

import pytest
from dagster import instance_for_test, materialize

from crawl_assets.crawler.settings import SettingsError
from crawl_assets.defs.assets import frontier_snapshot
from crawl_assets.defs.partitions import SHARD_KEYS
from crawl_assets.defs.resources import CrawlSettingsResource


def test_a_run_may_change_other_settings(tmp_path):
    overlay = tmp_path / "run.toml"
    overlay.write_text(f"[crawl]\nmax_pages_per_host = 7\nshard_count = {len(SHARD_KEYS)}\n")
    settings = CrawlSettingsResource(settings_files=[str(overlay)], data_root=str(tmp_path)).load()
    assert settings.max_pages_per_host == 7 and settings.data_root == tmp_path


def test_a_run_that_changes_the_shard_count_is_refused_naming_both_numbers(tmp_path):
    overlay = tmp_path / "run.toml"
    overlay.write_text("[crawl]\nshard_count = 3\n")
    resource = CrawlSettingsResource(settings_files=[str(overlay)], data_root=str(tmp_path))
    with pytest.raises(SettingsError, match=rf"shard_count is 3 .*run.toml.* loaded with {len(SHARD_KEYS)} shards"):
        resource.load()
    with instance_for_test() as instance:
        result = materialize([frontier_snapshot], instance=instance, partition_key="2026-11-29",
                             resources={"crawl_settings": resource}, raise_on_error=False)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error.cause.cls_name == "SettingsError" and "shard_count is 3" in error.cause.message
    assert not (tmp_path / "frontier").exists()  # nothing was written for shards no partition owns
