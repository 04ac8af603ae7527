"""The opt-in special hosts (plugins.py lists them): hostile, trap, near-duplicate,
politeness and page-signal hosts, each answering for its own host names."""
