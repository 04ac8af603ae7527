"""The WARC files: the writer (checked byte for byte against warcio) and their indexes."""
