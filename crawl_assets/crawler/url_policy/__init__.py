"""Which URLs the crawl takes and where they go: one canonical form, robots.txt, the trap
defences, host shards, the seen-URL filter, host patterns, the address guard, seed lists."""
