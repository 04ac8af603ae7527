"""The one Definitions entry point (workspace.yaml points here)."""

from dagster import Definitions

from .assets import ALL_ASSETS
from .jobs import ALL_JOBS
from .resources import CrawlSettingsResource

defs = Definitions(
    assets=ALL_ASSETS,
    jobs=ALL_JOBS,
    resources={"crawl_settings": CrawlSettingsResource()},
)
