"""The crawler core: fetching, URLs, WARC writing. It imports nothing from Dagster."""
