"""The render tier as part of a fetch batch: after the engine has fetched what it can, the
pages of hosts that need JavaScript (settings.render_hosts: listed by pattern, or learnt from a
sample with "auto", render_decision.py) are rendered, and the links of their DOM are admitted
like any others; the engine then fetches those, and their pages are rendered in turn, until
nothing new is found or the batch's render budget is spent.

For each rendered page the WARC holds the exchanges of every request the browser made
(request/response records, written by PoliteFetcher: a payload archived before as a revisit,
and what the batch's cache serves again not at all) and the rendered DOM as a `conversion`
record whose WARC-Refers-To is the page's response record (or its revisit record, when the
shell is the one archived before: what its scripts load may have changed all the same); its
fetch-log row gets the DOM's SimHash, change digest and outlink count and rendered=True, so
near-duplicate and change detection compare rendered pages by what a reader sees. (A page
rendered once is fetched without validators after, pipeline/frontier_step.py: a 304 would leave
the browser no shell to run.) Pages of other hosts are never rendered, and no
browser starts for a batch without a page to render."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from fnmatch import fnmatch

from ..content.body import examine
from ..content.decoding import DecodingError, decode_body
from ..content.html_tree import parse_html
from ..content.script_signals import ScriptSignals, visible_text_chars
from ..fetching.answer_records import AnswerRecorder, found_links
from ..fetching.engine import FetchEngine, fewer_young_collections
from ..fetching.fetch_record import FetchRecord
from ..fetching.workbench import FetchTask
from ..settings import CrawlSettings
from .browser import BrowserPool
from .polite_fetch import PoliteFetcher
from .render_decision import AUTO, Decision, HostEvidence, RenderTier
from .render_page import Rendered, render_page


def renders_host(host: str, settings: CrawlSettings) -> bool:
    """Whether a render_hosts pattern names the host ("auto" names none)."""
    return any(fnmatch(host, pattern) for pattern in settings.render_hosts if pattern != AUTO)


def batch_render_budget(settings: CrawlSettings) -> int:
    """A shard's part of the daily render budget."""
    return math.ceil(settings.render_daily_budget / settings.shard_count)


@dataclasses.dataclass
class RenderCounts:
    rendered_pages: int = 0
    render_errors: int = 0
    left_unrendered: int = 0  # pages kept for the browser that the render budget left (_leave_unrendered)
    browser_requests: int = 0  # answered for the browser (the pages' own documents excluded, robots.txt included)
    subresource_requests: int = 0  # of them, for the pages' subresources (robots.txt excluded)
    subresources_from_cache: int = 0  # subresources served again without a request (subresource_cache.py)
    subresources_revalidated: int = 0  # conditional requests the host answered 304
    refused_requests: dict[str, int] = dataclasses.field(default_factory=dict)  # reason -> requests
    browser_s: float = 0.0  # wall seconds the browser was open (the engine's turns in between included)
    hosts: dict[str, HostEvidence] = dataclasses.field(default_factory=dict)  # decisions and evidence


class RenderPass:
    def __init__(self, engine: FetchEngine, settings: CrawlSettings, in_scope: Callable[[str], bool],
                 remembered: Mapping[str, Decision] | None = None):
        """remembered: each host's last decision taken on a sample (RenderTier.remembered)."""
        self.engine, self.settings = engine, settings
        self.recorder: AnswerRecorder = engine.recorder
        self.tier = RenderTier(lambda host: renders_host(host, settings), AUTO in settings.render_hosts,
                               dict(remembered or {}))
        self.recorder.keep_pages = self._keeps
        self.fetcher = PoliteFetcher(settings, engine.exchanger, engine.recorder,
                                     engine.workbench.hosts, engine.clock, in_scope)
        self.budget = batch_render_budget(settings)
        self.counts = RenderCounts()

    def _keeps(self, host: str, signals: ScriptSignals | None) -> bool:
        return self.tier.keeps(host, signals is not None and signals.needs_script)

    def _waiting(self) -> list[FetchRecord]:
        """The fetch-log rows of the kept pages not rendered yet (a row a checkpoint has saved
        and let go of included)."""
        return [row for _, _, row in self.recorder.kept.values()]

    def _due(self) -> list[FetchRecord]:
        """The waiting rows to render now (of an undecided host, a sample); the kept pages of
        hosts decided against rendering are let go."""
        due, taken = [], {}
        for row in self._waiting():
            if self.tier.evidence(row.host).decision == Decision.PLAIN:
                del self.recorder.kept[row.url]
            elif self.tier.wants(row.host, taken.get(row.host, 0)):
                taken[row.host] = taken.get(row.host, 0) + 1
                due.append(row)
        return due

    def _replace(self, old: FetchRecord, new: FetchRecord) -> None:
        """Put a page's rendered row in the batch's output: in place while the row is in memory;
        once a checkpoint has saved it and let it go, as a later row (a checkpointed batch's
        output keeps each URL's latest row, progress.output_of)."""
        records = self.engine.output.records
        for i in range(len(records) - 1, -1, -1):
            if records[i] is old:
                records[i] = new
                return
        records.append(new)

    async def run(self, tasks, **engine_options) -> None:
        self.counts.hosts = self.tier.hosts
        await self.engine.run(tasks, **engine_options)
        due = self._due()
        if due and self.budget > 0:
            await self._render_rounds(due, engine_options)
        self._leave_unrendered()

    async def _render_rounds(self, due: list[FetchRecord], engine_options) -> None:
        """Render the due pages, let the engine fetch the links they found, and so on until
        nothing new is due or the budget is spent."""
        opened = time.monotonic()
        async with BrowserPool(self.settings.chromium_path, self.settings.render_pool_size) as pool:
            while due and self.budget > 0:
                due = due[:self.budget]
                self.budget -= len(due)
                await asyncio.gather(*(self._render(pool, row) for row in due))
                if self.engine.workbench.busy():
                    await self.engine.run([], **engine_options)
                self.tier.settle({row.host for row in self._waiting()})
                due = self._due()
        self.counts.browser_s = time.monotonic() - opened
        self.tier.settle(set(), final=True)
        await self.fetcher.close()
        fetcher = self.fetcher
        self.counts.browser_requests = fetcher.requests
        self.counts.subresource_requests = fetcher.requests - fetcher.robots_requests
        self.counts.subresources_from_cache = fetcher.cache.hits
        self.counts.subresources_revalidated = fetcher.cache.revalidated

    def _leave_unrendered(self) -> None:
        """The pages still kept for the browser once the budget is spent (of hosts not decided
        against rendering) keep their plain rows, less the SimHash and change digest: a shell is
        not the page a reader sees, and change detection would count a rendered visit against
        it as a change, and near-duplicate detection group the shells."""
        for row in self._waiting():
            if self.tier.evidence(row.host).decision != Decision.PLAIN:
                self.counts.left_unrendered += 1
                self._replace(row, dataclasses.replace(row, simhash=None, change_digest=None))
        self.recorder.kept.clear()

    async def _render(self, pool: BrowserPool, record: FetchRecord) -> None:
        hop, response_id, _ = self.recorder.kept.pop(record.url)
        rendered = await render_page(pool, self.fetcher, record.url, hop, self.settings.render_timeout_s,
                                     self.settings.render_clicks)
        for refusal in rendered.refused:
            self.counts.refused_requests[refusal.reason] = self.counts.refused_requests.get(refusal.reason, 0) + 1
        if rendered.error is not None:
            self.counts.render_errors += 1
            evidence = self.tier.evidence(record.host)
            if evidence.decision is None:  # a sample that cannot render shows nothing more
                evidence.add_sample(record.outlinks, 0, 0, 0)
            self._replace(record, dataclasses.replace(record, rendered=True, error=f"render failed: {rendered.error}"))
            return
        self.counts.rendered_pages += 1
        self._replace(record, self._record_rendered(record, rendered, hop, response_id))

    def _record_rendered(self, record, rendered: Rendered, hop, response_id: str):
        dom = rendered.dom.encode("utf-8")
        self.recorder.warc.write_conversion(record.url, response_id, hop.exchange.record_date, dom)
        facts = examine(dom, "text/html; charset=utf-8", None, record.url, self.settings.max_body_bytes,
                        self.recorder.agent)
        links = found_links(facts.outlinks, facts.nofollow_links, facts.directives.nofollow)
        follow, unfollowed = links.follow, links.unfollowed
        page = FetchTask(record.url, record.host, record.depth)
        if follow or unfollowed:
            self.engine.admission.links_found(page, follow, unfollowed, links.reason)
        self._add_evidence(record, hop, len(follow) + len(unfollowed), dom)
        return dataclasses.replace(record, rendered=True, simhash=facts.simhash, change_digest=facts.change_digest,
                                   outlinks=len(follow) + len(unfollowed))

    def _add_evidence(self, record, hop, rendered_links: int, dom: bytes) -> None:
        """The page's plain fetch against its rendering, for the host's decision (a sample
        page's, or a listed host's: the pages rendered once a host is decided add nothing)."""
        evidence = self.tier.evidence(record.host)
        evidence.pages_rendered += 1
        if evidence.decision in (None, Decision.LISTED):
            evidence.add_sample(record.outlinks, rendered_links, plain_text_chars(hop, self.settings.max_body_bytes),
                                visible_text_chars(parse_html(dom)))


def plain_text_chars(hop, limit: int) -> int:
    """Visible text of the plain fetch's page (the page is about to be rendered: this is cheap)."""
    try:
        body = decode_body(hop.exchange.body, hop.header("content-encoding"), limit)[0]
    except DecodingError:
        return 0
    return visible_text_chars(parse_html(body))


def run_with_render(engine: FetchEngine, settings: CrawlSettings, tasks, in_scope: Callable[[str], bool],
                    remembered: Mapping[str, Decision] | None = None, **engine_options) -> RenderCounts | None:
    """engine.run_blocking(tasks), with the render pass when settings.render_hosts names hosts."""
    if not settings.render_hosts:
        engine.run_blocking(tasks, **engine_options)
        return None
    render = RenderPass(engine, settings, in_scope, remembered)

    async def whole_batch() -> None:
        await render.run(tasks, **engine_options)

    with fewer_young_collections():
        asyncio.run(whole_batch())
    return render.counts
