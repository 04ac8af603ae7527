"""Which hosts need the browser, learnt from their pages (render_hosts = ["auto", ...]).

A page whose plain fetch shows the script signals (content/script_signals.py) makes its host a
candidate; the host's first SAMPLE_PAGES such pages are rendered as a sample, and the host
goes to the render tier (its other pages of the batch rendered too) when rendering the sample
found materially more than the plain fetch did: at least MORE_FACTOR times the links and
MIN_MORE_LINKS more, or MORE_FACTOR times the visible text and MIN_MORE_TEXT_CHARS more.
Otherwise it stays out (its pages are not rendered). Each day's decision and its evidence is a
row of the render_decisions table (docs/CATALOG.md).

The tier remembers (`remembered`: each host's last decision taken on a sample within
MEMORY_DAYS, pipeline/fetch_step.load_render_memory). A host decided "plain" is not sampled
again until then: its row says plain with no page sampled, and the render budget goes to hosts
that need it. A host decided "render" has every page that shows the signals rendered from the
first round, no sample waited for, and is decided again on all of them: it leaves the tier the
day rendering them no longer finds materially more. Hosts listed by pattern in render_hosts are
always rendered (decision "listed"), with their evidence recorded all the same."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

AUTO = "auto"  # the render_hosts entry that turns the learning on
SAMPLE_PAGES = 3  # pages of a candidate host rendered before it is decided
MORE_FACTOR = 1.5  # "materially more": half again as many links or as much text ...
MIN_MORE_LINKS = 2  # ... and at least this many links more,
MIN_MORE_TEXT_CHARS = 200  # or this many characters of visible text more
MEMORY_DAYS = 7  # a decision taken on a sample holds this many days (a "plain" host is not resampled)


class Decision(StrEnum):
    RENDER = "render"  # rendering the sample found materially more: the host's pages are rendered
    PLAIN = "plain"  # it did not: the host's pages are not rendered
    LISTED = "listed"  # named by a render_hosts pattern: always rendered


@dataclass
class HostEvidence:
    """What a host's rendered pages showed against their plain fetches (sums over the sample)."""

    signal_pages: int = 0  # pages of the batch whose plain fetch showed the signals
    pages_sampled: int = 0
    plain_links: int = 0
    rendered_links: int = 0
    plain_text_chars: int = 0
    rendered_text_chars: int = 0
    pages_rendered: int = 0  # every page of the host rendered in the batch, the sample included
    decision: Decision | None = None  # None: not decided yet

    def add_sample(self, plain_links: int, rendered_links: int, plain_text: int, rendered_text: int) -> None:
        self.pages_sampled += 1
        self.plain_links += plain_links
        self.rendered_links += rendered_links
        self.plain_text_chars += plain_text
        self.rendered_text_chars += rendered_text


def materially_more(plain: int, rendered: int, least_more: int) -> bool:
    return rendered >= MORE_FACTOR * plain and rendered - plain >= least_more


def decide(evidence: HostEvidence) -> Decision:
    """The decision a host's sample evidence makes."""
    if materially_more(evidence.plain_links, evidence.rendered_links, MIN_MORE_LINKS) or \
            materially_more(evidence.plain_text_chars, evidence.rendered_text_chars, MIN_MORE_TEXT_CHARS):
        return Decision.RENDER
    return Decision.PLAIN


@dataclass
class RenderTier:
    """The batch's hosts as the render pass sees them: listed, or learnt from a sample."""

    listed: object  # host -> bool: named by a render_hosts pattern
    auto: bool
    remembered: Mapping[str, Decision] = field(default_factory=dict)  # host -> its last sampled decision
    hosts: dict[str, HostEvidence] = field(default_factory=dict)

    def evidence(self, host: str) -> HostEvidence:
        if host not in self.hosts:
            if self.listed(host):
                decision = Decision.LISTED
            elif self.remembered.get(host) == Decision.PLAIN:  # not sampled again yet
                decision = Decision.PLAIN
            else:
                decision = None
            self.hosts[host] = HostEvidence(decision=decision)
        return self.hosts[host]

    def keeps(self, host: str, needs_script: bool) -> bool:
        """Whether a page of `host` just fetched is kept for the browser."""
        if self.listed(host):
            return True
        if not self.auto:
            return False
        decision = self.evidence(host).decision if needs_script or host in self.hosts else None
        if needs_script:
            self.hosts[host].signal_pages += 1
        return decision == Decision.RENDER or (decision is None and needs_script)

    def wants(self, host: str, taken: int) -> bool:
        """Whether a kept page of `host` is rendered now, `taken` of its pages being already
        picked for this round: all of a listed or render-tier host, all of an undecided one
        remembered in the tier, a sample of another undecided one."""
        evidence = self.evidence(host)
        if evidence.decision in (Decision.LISTED, Decision.RENDER):
            return True
        if evidence.decision is None and self.remembered.get(host) == Decision.RENDER:
            return True
        return evidence.decision is None and evidence.pages_sampled + taken < SAMPLE_PAGES

    def settle(self, waiting: set[str], final: bool = False) -> None:
        """Decide the undecided hosts whose sample is complete: SAMPLE_PAGES rendered, or no
        page of theirs waiting (`waiting`: hosts with kept pages not rendered yet), or `final`."""
        for host, evidence in self.hosts.items():
            if evidence.decision is None and evidence.pages_sampled and (
                    final or evidence.pages_sampled >= SAMPLE_PAGES or host not in waiting):
                evidence.decision = decide(evidence)
