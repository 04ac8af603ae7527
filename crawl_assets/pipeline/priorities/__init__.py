"""recrawl_priorities[D]: how often to refetch each URL (the freshness-optimal allocation of
the budget), when it is next due, and the plan of day D + 1 that the frontier reads."""
