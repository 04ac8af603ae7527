"""The one Definitions entry point (workspace.yaml points here)."""

from dagster import Definitions

from sensors import ALL_SENSORS

from .defs.assets import ALL_ASSETS
from .defs.jobs import ALL_JOBS
from .defs.resources import CrawlSettingsResource
from .defs.schedules import ALL_SCHEDULES
from .deployment.cluster import run_executor

defs = Definitions(
    assets=ALL_ASSETS,
    jobs=ALL_JOBS,
    schedules=ALL_SCHEDULES,
    sensors=ALL_SENSORS,
    resources={"crawl_settings": CrawlSettingsResource()},
    # Each run executes its steps in the run's own process: a step's work is I/O or DuckDB (which
    # has its own threads), and a process per step would import the package again for each.
    # A deployment of several machines sends them to Celery workers instead (deployment/cluster.py).
    executor=run_executor(),
)
