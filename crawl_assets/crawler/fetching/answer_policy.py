"""What an answer means: retry it (with backoff, or when the host says via Retry-After), follow
its redirect (hop by hop, with loop and length limits), or take it as the URL's outcome.

Pure functions of the answer (a HopResult) and the task: no I/O, no clock but the one passed
in, randomness only through the rng passed in. The engine acts on the verdicts.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from datetime import timezone

from ..content.decoding import DecodingError, decode_body
from ..settings import CrawlSettings
from ..url_policy.robots import RobotsResponse
from ..url_policy.urls import UrlError, normalize_url
from ..vocabulary import StatusClass
from .http_exchange import HopResult
from .workbench import FetchTask

RETRYABLE_ERRORS = frozenset({StatusClass.CONNECT_ERROR, StatusClass.NETWORK_ERROR})
PUSHBACK_STATUSES = frozenset({429, 503})  # the statuses whose Retry-After we honour
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 §2.3.1.2: follow at least five (more: we treat it as unreachable)
ROBOTS_FETCH_LIMIT = 512 * 1024  # a little over the 500 KiB RFC 9309 asks parsers to read


def status_class_of(status: int, retry_after: str | None = None) -> StatusClass:
    """The class of an answer's status; 429, and a 503 that says when to come back (its
    Retry-After header, given as `retry_after`), are THROTTLED: "slow down" is not "gone"."""
    if status == 429 or (status == 503 and retry_after):
        return StatusClass.THROTTLED
    if status == 304:
        return StatusClass.NOT_MODIFIED
    if 200 <= status < 300:
        return StatusClass.OK
    if 300 <= status < 400:
        return StatusClass.REDIRECT
    if 400 <= status < 500:
        return StatusClass.HTTP_4XX
    if 500 <= status < 600:
        return StatusClass.HTTP_5XX
    return StatusClass.HTTP_OTHER


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as seconds from now: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


# -- verdicts on a page's answer -----------------------------------------------------------

@dataclass(frozen=True)
class Retry:
    """Ask again later: the task goes back first in its host's queue, the host waits wait_s."""

    wait_s: float


@dataclass(frozen=True)
class Outcome:
    """The answer is the URL's outcome in this batch, recorded as it is. host_wait_s: the
    host's Retry-After (within the cap), which still spaces its next request."""

    host_wait_s: float = 0.0


@dataclass(frozen=True)
class LeaveHostAlone:
    """The host asked to be left alone (Retry-After) for longer than max_retry_after_s: the
    answer is the URL's outcome, not retried, and the host gets no request for the rest of
    the batch (its queued URLs wait for a later cycle). `error` says so in the fetch log."""

    asked_s: float
    error: str


@dataclass(frozen=True)
class Redirect:
    """A redirect to follow: `target` becomes a task of its own host (same depth, chain kept)."""

    target: str
    chain: tuple[str, ...]  # the URLs that redirected so far, oldest first, this one last


@dataclass(frozen=True)
class DeadEndRedirect:
    """A redirect not followed: a loop, one hop too many, or a Location that is no URL."""

    status_class: StatusClass  # REDIRECT_LOOP, TOO_MANY_REDIRECTS, or REDIRECT (unusable target)
    error: str
    target: str | None = None


Verdict = Retry | Outcome | LeaveHostAlone | Redirect | DeadEndRedirect
OUTCOME = Outcome()


def judge_answer(task: FetchTask, hop: HopResult, settings: CrawlSettings,
                 rng: random.Random, now: float | None = None) -> Verdict:
    """What the engine does with this answer to `task` (see the verdict classes)."""
    status = hop.status
    asked = None
    if status in PUSHBACK_STATUSES:
        value = hop.header("retry-after")
        asked = retry_after_seconds(value, now)
        if asked is not None and asked > settings.max_retry_after_s:
            return LeaveHostAlone(asked, f"{status} with Retry-After {value!r} ({asked:.0f} s), above "
                                         f"max_retry_after_s ({settings.max_retry_after_s:g} s): not retried, "
                                         "and the host is left alone for the rest of the batch")
    retryable = hop.error_class in RETRYABLE_ERRORS or status == 429 or (status is not None and status >= 500)
    if retryable and task.attempt < settings.max_attempts:
        wait = settings.retry_base_s * 2 ** (task.attempt - 1) * rng.uniform(0.5, 1.5)
        return Retry(max(wait, asked or 0.0))
    if status is not None and status_class_of(status) == StatusClass.REDIRECT and not hop.truncated:
        return redirect_verdict(task.url, hop.header("location"), task.redirect_chain, settings.max_redirects)
    return Outcome(asked) if asked else OUTCOME


def redirect_verdict(url: str, location: str | None, chain: tuple[str, ...],
                     max_redirects: int) -> Redirect | DeadEndRedirect:
    """Where a redirect from `url` (reached through `chain`) leads, if it may be followed."""
    try:
        target = normalize_url(location or "", url)
    except UrlError as exc:
        return DeadEndRedirect(StatusClass.REDIRECT, f"unusable redirect target: {exc}")
    chain = chain + (url,)
    if target in chain:
        return DeadEndRedirect(StatusClass.REDIRECT_LOOP, f"redirects back to {target}", target)
    if len(chain) > max_redirects:
        return DeadEndRedirect(StatusClass.TOO_MANY_REDIRECTS, f"more than {max_redirects} redirects", target)
    return Redirect(target, chain)


# -- verdicts on a robots.txt answer ------------------------------------------------------------

@dataclass(frozen=True)
class RobotsHop:
    """robots.txt redirected: ask `url` next (a request to its own host, in that host's turn)."""

    url: str
    chain: tuple[str, ...]


@dataclass(frozen=True)
class RobotsAnswer:
    """The robots.txt fetch is over: what it returned, and why it failed if it did."""

    response: RobotsResponse
    failure: tuple[str, str] | None = None  # (status class, message) of an unreachable host


def judge_robots_answer(task: FetchTask, hop: HopResult) -> RobotsHop | RobotsAnswer:
    """RFC 9309: follow up to five redirects. A redirect that cannot be followed (a sixth
    hop, a loop, a Location that is no URL) makes robots.txt unreachable: nothing is fetched
    from the host until it can be read. A 3xx without Location is passed on as is."""
    if hop.exchange is None:
        return RobotsAnswer(RobotsResponse(None), (hop.error_class, f"robots.txt: {hop.error}"))
    status = hop.exchange.status
    location = hop.header("location")
    if 300 <= status < 400 and location:
        verdict = redirect_verdict(task.url, location, task.redirect_chain, ROBOTS_MAX_REDIRECTS)
        if isinstance(verdict, Redirect):
            return RobotsHop(verdict.target, verdict.chain)
        return RobotsAnswer(RobotsResponse(None), (StatusClass.ROBOTS_UNAVAILABLE, f"robots.txt: {verdict.error}"))
    try:
        body = decode_body(hop.exchange.body, hop.header("content-encoding"), ROBOTS_FETCH_LIMIT)[0]
    except DecodingError:
        body = b""
    return RobotsAnswer(RobotsResponse(status, body))
