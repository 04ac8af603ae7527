"""The crawler core; it imports nothing from Dagster. url_policy (which URLs, and where they
go) and content (what a body holds) under fetching (the polite engine), under batches (one
fetch batch, end to end); archive writes the WARC files. settings, vocabulary and
crawl_errors, here, are shared by all of them."""
