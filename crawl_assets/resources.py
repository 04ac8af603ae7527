"""The crawl settings as a Dagster resource, so a run can override them from the launchpad."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dagster import ConfigurableResource

from .crawler.settings import CrawlSettings, load_settings


class CrawlSettingsResource(ConfigurableResource):
    """Settings come from recrawl.toml and RECRAWL_SETTINGS; these fields override them."""

    settings_files: list[str] = []
    data_root: str | None = None
    seeds_dir: str | None = None

    def load(self) -> CrawlSettings:
        settings = load_settings(*self.settings_files)
        overrides = {}
        if self.data_root:
            overrides["data_root"] = Path(self.data_root).resolve()
        if self.seeds_dir:
            overrides["seeds_dir"] = Path(self.seeds_dir).resolve()
        return dataclasses.replace(settings, **overrides)
