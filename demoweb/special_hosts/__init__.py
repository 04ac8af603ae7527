"""The opt-in special hosts (plugins.py lists them): hostile, trap, near-duplicate,
politeness, page-signal, frame-linked and single-page-application hosts, each answering for its own host names."""
