"""change_stats[D]: each URL's visits folded into its change history, the evidence of
Last-Modified, sitemaps and feeds, and the estimated change rates with their pooled priors."""
