"""The opt-in special hosts (plugins.py lists them): hostile, trap, near-duplicate,
politeness, page-signal and frame-linked hosts, each answering for its own host names."""
