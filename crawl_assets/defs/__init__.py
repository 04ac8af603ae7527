"""The Dagster layer (Dagster's defs/ folder): the assets, their jobs, schedule, checks,
partitions, resources, run policies and UI metadata. crawl_assets/definitions.py gathers
them (and the sensors) into the one Definitions object; nothing below defs/ imports it."""
