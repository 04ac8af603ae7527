"""The command line: the run drivers a person starts.

    python -m crawl_assets.cli.cycle   one crawl day (or several) through Dagster's run queue
    python -m crawl_assets.cli.demo    the demo: serve the demo web, crawl it, print a summary

launcher.py submits the runs to the instance and follows them (both drivers use it)."""
