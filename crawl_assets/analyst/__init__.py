"""What an analyst runs against a finished crawl, read-only.

    python -m crawl_assets.analyst.sql        SQL over the DuckDB catalog
    python -m crawl_assets.analyst.captures   captures of a URL in the WARC files"""
