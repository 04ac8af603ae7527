"""The data root: where every table's files live under it (layout.py), and the file
operations that differ between a local folder and an fsspec URL (shared_root.py)."""
