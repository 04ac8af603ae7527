"""The render tier's memory as the fetch step reads it (pipeline/fetch_step.load_render_memory):
each host's latest decision taken on a sample, in the MEMORY_DAYS before the day, from every
shard's render_decisions files. Rows with no page sampled (a remembered decision repeated,
a listed host, a host the budget left unsampled) do not count."""

import dataclasses

from crawl_assets.crawler.batches.arrow_schemas import render_decisions_table
from crawl_assets.crawler.rendering.render_decision import MEMORY_DAYS, Decision, HostEvidence
from crawl_assets.pipeline.fetch_step import load_render_memory
from crawl_assets.storage.layout import render_decisions_file, write_parquet_atomic
from crawl_files import settings_for

DAY = "2026-11-20"


def write_decisions(root, date, shard, rows: dict[str, tuple[Decision | None, int]]) -> None:
    """rows: host -> (decision, pages sampled)."""
    hosts = {host: HostEvidence(signal_pages=3, pages_sampled=n, decision=d) for host, (d, n) in rows.items()}
    write_parquet_atomic(render_decisions_table(hosts), render_decisions_file(root, date, shard))


def test_each_host_has_its_latest_sampled_decision_of_the_days_before(tmp_path):
    settings = settings_for(tmp_path, render_hosts=("auto",), shard_count=2)
    assert MEMORY_DAYS == 7  # the dates below: 2026-11-13 is the first day remembered
    write_decisions(tmp_path, "2026-11-12", "s00", {"old.test": (Decision.PLAIN, 3)})  # forgotten
    write_decisions(tmp_path, "2026-11-13", "s00", {"spa.test": (Decision.PLAIN, 3), "kept.test": (Decision.PLAIN, 2)})
    write_decisions(tmp_path, "2026-11-18", "s00", {"spa.test": (Decision.RENDER, 3),
                                                    "kept.test": (Decision.PLAIN, 0),  # repeated, not sampled
                                                    "listed.test": (Decision.LISTED, 4),
                                                    "unsampled.test": (None, 0)})
    write_decisions(tmp_path, "2026-11-19", "s01", {"other.test": (Decision.RENDER, 1)})
    write_decisions(tmp_path, DAY, "s00", {"spa.test": (Decision.PLAIN, 3)})  # the day itself: not read
    assert load_render_memory(tmp_path, DAY, settings) == {
        "spa.test": Decision.RENDER, "kept.test": Decision.PLAIN, "other.test": Decision.RENDER}
    assert load_render_memory(tmp_path, DAY, dataclasses.replace(settings, render_hosts=("spa.test",))) == {}
    assert load_render_memory(tmp_path, "2026-11-01", settings) == {}
