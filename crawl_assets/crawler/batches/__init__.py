"""One fetch batch from start to end: frontier rows in, WARC files and tables out (batch),
checkpoints and resuming after a crash (progress, checkpoint), the frontier spilled to
disk, and the Arrow schemas of the crawl's tables."""
