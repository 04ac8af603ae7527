"""What a fetched body holds: decoding, the HTML tree, links, the page's robots signals,
sitemaps and feeds, SimHash (with its compiled kernel) and MinHash."""
