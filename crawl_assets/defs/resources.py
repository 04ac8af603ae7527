"""The crawl settings as a Dagster resource, so a run can override them from the launchpad."""

from __future__ import annotations

from dagster import ConfigurableResource

from ..crawler.settings import CrawlSettings, SettingsError, load_settings, with_run_overrides
from .partitions import DAY_PER_SHARD, SHARD_KEYS


class CrawlSettingsResource(ConfigurableResource):
    """Settings come from recrawl.toml and RECRAWL_SETTINGS; these fields override them.

    shard_count and day_per_shard are the settings a run cannot change: the fetch partitions
    (one per shard) and the day's assets were fixed when the definitions loaded, so a run whose
    settings name another count, or the other shape of day, is refused rather than writing
    files that no partition or asset owns."""

    settings_files: list[str] = []
    data_root: str | None = None
    seeds_dir: str | None = None

    def load(self) -> CrawlSettings:
        settings = load_settings(*self.settings_files)
        if settings.shard_count != len(SHARD_KEYS):
            raise SettingsError(
                f"shard_count is {settings.shard_count} in this run's settings "
                f"({', '.join(self.settings_files) or 'recrawl.toml and RECRAWL_SETTINGS'}), but the fetch "
                f"partitions were loaded with {len(SHARD_KEYS)} shards ({SHARD_KEYS[0]}..{SHARD_KEYS[-1]}): "
                "set shard_count where the definitions read it (recrawl.toml or RECRAWL_SETTINGS) "
                "and reload the code location, or drop it from the run's settings")
        if settings.day_per_shard != DAY_PER_SHARD:
            raise SettingsError(
                f"day_per_shard is {str(settings.day_per_shard).lower()} in this run's settings, but the definitions "
                f"were loaded with {str(DAY_PER_SHARD).lower()}: set it where the definitions read it "
                "(recrawl.toml or RECRAWL_SETTINGS) and reload the code location, or drop it from the run's settings")
        return with_run_overrides(settings, self.data_root, self.seeds_dir)
