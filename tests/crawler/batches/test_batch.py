"""run_fetch_batch's own part: scope, and what an empty batch leaves (no network)."""

import dataclasses

from crawl_assets.crawler.batches.batch import in_scope, run_fetch_batch
from crawl_assets.crawler.settings import load_settings

SETTINGS = load_settings(use_env=False)


def test_host_scope_patterns_and_an_empty_scope_meaning_everything():
    scoped = dataclasses.replace(SETTINGS, host_scope=("*.demo.test", "example.org"))
    assert in_scope("h0001.demo.test", scoped) and in_scope("example.org", scoped)
    assert not in_scope("demo.test.evil.org", scoped) and not in_scope("www.example.org", scoped)
    assert in_scope("anything.test", dataclasses.replace(SETTINGS, host_scope=()))


def test_an_empty_batch_writes_no_warc_file_and_returns_nothing(tmp_path):
    result = run_fetch_batch(SETTINGS, 0, [], tmp_path / "warc", "t")
    assert result.warc_files == [] and result.output.records == [] and result.output.links == []
    assert not (tmp_path / "warc").exists() or not any((tmp_path / "warc").iterdir())
