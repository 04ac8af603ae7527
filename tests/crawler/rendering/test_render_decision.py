"""The render tier's per-host decision (rendering/render_decision.py) from evidence rows, and
the RenderTier's bookkeeping: which pages are kept for the browser, how many are sampled, when
a host is decided; a shard's part of the daily render budget. No browser, no network."""

from dataclasses import replace

import pytest

from crawl_assets.crawler.batches.arrow_schemas import render_decisions_table
from crawl_assets.crawler.rendering.render_pass import batch_render_budget
from crawl_assets.crawler.settings import CrawlSettings
from crawl_assets.crawler.rendering.render_decision import (
    SAMPLE_PAGES, Decision, HostEvidence, RenderTier, decide,
)


def sampled(*pages: tuple[int, int, int, int]) -> HostEvidence:
    """Evidence of sample pages, each (plain links, rendered links, plain text, rendered text)."""
    evidence = HostEvidence()
    for page in pages:
        evidence.add_sample(*page)
    return evidence


@pytest.mark.parametrize(("pages", "expected"), [
    (((0, 2, 0, 240), (0, 1, 0, 240), (0, 1, 0, 240)), Decision.RENDER),  # an SPA shell: links and text appear
    (((0, 6, 0, 30),), Decision.RENDER),  # "load more": links only
    (((0, 0, 10, 900),), Decision.RENDER),  # text only
    (((12, 12, 3000, 3010), (8, 8, 2000, 2000)), Decision.PLAIN),  # scripts add nothing
    (((10, 14, 3000, 3100),), Decision.PLAIN),  # 40 % more links: not material
    (((0, 1, 0, 150),), Decision.PLAIN),  # one link and a little text: below both floors
    (((40, 60, 0, 0),), Decision.RENDER),  # 1.5x and 20 more links
])
def test_a_host_renders_when_its_sample_finds_materially_more(pages, expected):
    assert decide(sampled(*pages)) == expected


@pytest.mark.parametrize(("pages", "expected"), [
    # The factor alone is not enough: MIN_MORE_LINKS (2) more links, or MIN_MORE_TEXT_CHARS (200) more text.
    (((0, 2, 0, 0),), Decision.RENDER), (((0, 1, 0, 0),), Decision.PLAIN),
    (((4, 6, 0, 0),), Decision.RENDER), (((2, 3, 0, 0),), Decision.PLAIN),  # both 1.5x
    (((0, 0, 0, 200),), Decision.RENDER), (((0, 0, 0, 199),), Decision.PLAIN),
    (((400, 600, 0, 0),), Decision.RENDER), (((0, 0, 300, 450),), Decision.PLAIN),  # both 1.5x
    (((0, 0, 400, 600),), Decision.RENDER), (((0, 0, 398, 597),), Decision.PLAIN),  # 199 more
    # ... and the floor alone is not enough either: half again as many.
    (((10, 14, 0, 0),), Decision.PLAIN), (((10, 15, 0, 0),), Decision.RENDER),
    (((1000, 1499, 0, 0),), Decision.PLAIN), (((0, 0, 1000, 1499),), Decision.PLAIN),
    # A sample is judged on its sums: two pages of one more link each are two more links,
    # two of 100 more characters each 200 more.
    (((0, 1, 0, 0), (0, 1, 0, 0)), Decision.RENDER), (((0, 0, 0, 100), (0, 0, 0, 100)), Decision.RENDER),
])
def test_materially_more_needs_both_the_factor_and_the_absolute_floor(pages, expected):
    assert decide(sampled(*pages)) == expected


def test_listed_hosts_are_kept_and_others_only_in_auto_mode():
    listed = RenderTier(lambda host: host == "spa.test", auto=False)
    assert listed.keeps("spa.test", needs_script=False)
    assert not listed.keeps("other.test", needs_script=True)
    assert listed.evidence("spa.test").decision == Decision.LISTED
    auto = RenderTier(lambda host: False, auto=True)
    assert not auto.keeps("plain.test", needs_script=False)
    assert "plain.test" not in auto.hosts  # hosts without signal pages leave no row
    assert auto.keeps("shell.test", needs_script=True)
    assert not auto.keeps("shell.test", needs_script=False)  # undecided: only its signal pages
    assert auto.hosts["shell.test"].signal_pages == 1


def test_an_undecided_host_is_sampled_then_decided_and_its_later_pages_follow():
    tier = RenderTier(lambda host: False, auto=True)
    for _ in range(5):
        tier.keeps("a.test", needs_script=True)
    assert [tier.wants("a.test", taken) for taken in range(SAMPLE_PAGES + 1)] == [True] * SAMPLE_PAGES + [False]
    tier.evidence("a.test").add_sample(0, 3, 0, 300)
    tier.settle(waiting={"a.test"})
    assert tier.hosts["a.test"].decision is None  # one page of three, more waiting
    tier.hosts["a.test"].add_sample(0, 2, 0, 300)
    tier.hosts["a.test"].add_sample(0, 2, 0, 300)
    tier.settle(waiting={"a.test"})
    assert tier.hosts["a.test"].decision == Decision.RENDER
    assert tier.keeps("a.test", needs_script=False)  # in the tier: every page now

    tier.keeps("b.test", needs_script=True)
    tier.hosts["b.test"].add_sample(5, 5, 900, 900)
    tier.settle(waiting=set())  # nothing else of b waiting: decided on one page
    assert tier.hosts["b.test"].decision == Decision.PLAIN
    assert not tier.keeps("b.test", needs_script=True) and not tier.wants("b.test", 0)


def test_the_tier_remembers_a_hosts_last_sampled_decision():
    """A host decided plain is not sampled again (its row: plain, no page sampled); one decided
    render has every signal page rendered at once and is decided again on all of them, and
    leaves the tier when they no longer show more."""
    tier = RenderTier(lambda host: False, auto=True,
                      remembered={"plain.test": Decision.PLAIN, "spa.test": Decision.RENDER, "gone.test": Decision.RENDER})
    assert not tier.keeps("plain.test", needs_script=True)
    assert (tier.hosts["plain.test"].decision, tier.hosts["plain.test"].signal_pages) == (Decision.PLAIN, 1)
    for host in ("spa.test", "gone.test"):
        assert tier.keeps(host, needs_script=True)
        assert all(tier.wants(host, taken) for taken in range(2 * SAMPLE_PAGES))  # no sample to wait for
        assert tier.evidence(host).decision is None
    for _ in range(SAMPLE_PAGES + 1):
        tier.hosts["spa.test"].add_sample(0, 2, 0, 300)
        tier.hosts["gone.test"].add_sample(8, 8, 2000, 2000)  # now served whole: rendering adds nothing
    tier.settle(waiting=set())
    assert tier.hosts["spa.test"].decision == Decision.RENDER
    assert tier.hosts["gone.test"].decision == Decision.PLAIN and not tier.wants("gone.test", 0)
    rows = {r["host"]: r for r in render_decisions_table(tier.hosts).to_pylist()}
    assert (rows["plain.test"]["decision"], rows["plain.test"]["pages_sampled"]) == ("plain", 0)


def test_the_table_holds_each_hosts_evidence_and_decision():
    tier = RenderTier(lambda host: host == "listed.test", auto=True)
    tier.keeps("listed.test", needs_script=False)
    tier.evidence("listed.test").add_sample(1, 4, 50, 400)
    tier.keeps("budget.test", needs_script=True)  # never sampled: the budget was spent
    tier.keeps("shell.test", needs_script=True)
    tier.hosts["shell.test"].add_sample(0, 2, 0, 240)
    tier.settle(set(), final=True)
    rows = {r["host"]: r for r in render_decisions_table(tier.hosts).to_pylist()}
    assert rows["shell.test"] == {"host": "shell.test", "signal_pages": 1, "pages_sampled": 1, "plain_links": 0,
                                  "rendered_links": 2, "plain_text_chars": 0, "rendered_text_chars": 240,
                                  "decision": "render", "pages_rendered": 0}
    assert rows["listed.test"]["decision"] == "listed" and rows["listed.test"]["rendered_links"] == 4
    assert rows["budget.test"]["decision"] is None and rows["budget.test"]["pages_sampled"] == 0


@pytest.mark.parametrize(("daily", "shards", "per_batch"), [
    (1000, 1, 1000), (1000, 4, 250), (3, 2, 2), (10, 4, 3), (1, 8, 1), (0, 4, 0), (7, 7, 1)])
def test_each_shard_renders_its_part_of_the_daily_budget_rounded_up(daily, shards, per_batch):
    """A shard's batch renders at most its part of render_daily_budget: every shard's part
    together hold the budget, give or take one page a shard, and a small budget still renders."""
    settings = replace(CrawlSettings(), render_daily_budget=daily, shard_count=shards)
    assert batch_render_budget(settings) == per_batch


def test_every_page_of_a_listed_or_render_tier_host_is_wanted_and_signal_pages_are_counted():
    tier = RenderTier(lambda host: host == "listed.test", auto=True)
    for _ in range(4):
        tier.keeps("spa.test", needs_script=True)
    assert tier.hosts["spa.test"].signal_pages == 4
    tier.evidence("listed.test")
    tier.evidence("spa.test").decision = Decision.RENDER
    for host in ("listed.test", "spa.test"):
        assert all(tier.wants(host, taken) for taken in range(3 * SAMPLE_PAGES)), host
