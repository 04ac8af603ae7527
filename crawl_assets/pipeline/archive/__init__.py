"""The day's WARC files after the batch: their CDXJ/Parquet indexes (warc_index_step), the
archived-payload look-up on disk (payload_index), damaged files set aside (warc_quarantine) and
the upload to a shared root (warc_upload)."""
