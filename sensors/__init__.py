"""Sensors of the recrawl pipeline. They import from crawl_assets; only
crawl_assets/definitions.py imports them. None exist yet: schedules and sensors come later."""
