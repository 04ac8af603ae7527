"""The polite fetch engine: per-host back queues and their turns (workbench, visit state,
politeness, leases), which links are admitted, one HTTP exchange over the host's
connection (clients, resolver), what an answer means (answer_policy) and what it leaves
behind (answer_records: WARC records and a fetch-log row)."""
