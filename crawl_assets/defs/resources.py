"""The crawl settings as a Dagster resource, so a run can override them from the launchpad."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dagster import ConfigurableResource

from ..crawler.settings import CrawlSettings, SettingsError, load_settings
from ..storage.shared_root import data_root_path
from .partitions import SHARD_KEYS


class CrawlSettingsResource(ConfigurableResource):
    """Settings come from recrawl.toml and RECRAWL_SETTINGS; these fields override them.

    shard_count is the one setting a run cannot change: the fetch partitions (one per shard)
    were fixed when the definitions loaded, so a run whose settings name another count is
    refused rather than writing shard files that no partition owns."""

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
        overrides = {}
        if self.data_root:  # a folder, or a URL such as s3://bucket/prefix (storage/shared_root.py)
            try:
                overrides["data_root"] = data_root_path(self.data_root, Path.cwd())
            except ValueError as exc:
                raise SettingsError(f"the run's data_root {self.data_root!r}: {exc}") from None
        if self.seeds_dir:
            overrides["seeds_dir"] = Path(self.seeds_dir).resolve()
        return dataclasses.replace(settings, **overrides)
