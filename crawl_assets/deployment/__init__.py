"""Running on more than one machine (docs/SCALE.md): run storage on PostgreSQL, steps on
Celery workers (`python -m crawl_assets.deployment.cluster`)."""
