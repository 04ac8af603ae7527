"""Crawler-trap defences, applied together to every discovered URL.

Each defence answers "should this URL be dropped, and why?". The reasons are counted per host
so a person can see why a host stopped growing. URL-shaped traps (too long, too many query
parameters, repeating path segments, endless variations of one URL pattern such as calendars
and facets) are caught by looking at the URL; hosts that spawn new URLs far faster than they
can be fetched are caught by a HyperLogLog count of distinct new URLs per host (counted by
the batch of the host's own shard, the one that fetches it: admission.py; the URLs a sitemap or
feed lists are the host's own list, not growth, and are not counted); hosts demoted
elsewhere (e.g. mostly near-duplicates) and the hand-kept blocklist are inputs.

The URL-shape rules are written here only, in two forms side by side: one URL at a time (the
fetch batch asks about every link it finds) and over Arrow arrays (the frontier judges every
known URL, millions a day, where a Python call per URL would cost seconds). The array form
takes the same steps over the bytes of a whole batch (url_bytes.py), asking the scalar rules
only about URLs of unusual shape and, with a blocklist, its patterns; a property test checks
both forms agree on generated URLs.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:  # datasketch's package import pulls in scipy: every run would pay it at its start
    from datasketch import HyperLogLog

from ..settings import CrawlSettings
from ..vocabulary import DropReason
from .host_patterns import host_matches
from .url_bytes import ByteStrings, UrlBytes, sorted_within, spans, url_array
from .urls import path_of

# The array forms' answers: a small integer each, its place here (0: none).
REASONS = pa.array([None, *(reason.value for reason in DropReason)], pa.string())
REASON_PLACES: dict[DropReason | None, int] = {None: 0} | {reason: place for place, reason in enumerate(DropReason, 1)}
_DIGITS = re.compile(r"[0-9]+")  # ASCII digits (\d would take any script's digits too)
_PARAM_VALUE = re.compile(r"=[^&]*")


@dataclass(frozen=True)
class Blocklist:
    """Hosts (patterns like *.example.com) and URL patterns (fnmatch) never to crawl."""

    hosts: tuple[str, ...] = ()
    url_patterns: tuple[str, ...] = ()
    # Derived once: asked for every link found. A host's verdict is kept (a batch's hosts
    # repeat); the URL patterns are matched as one regex, not once each.
    _host_verdicts: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)
    _url_regex: re.Pattern | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.url_patterns:
            object.__setattr__(self, "_url_regex", url_patterns_regex(self.url_patterns))

    @classmethod
    def read(cls, path: Path | None) -> "Blocklist":
        """One entry a line: `host <pattern>` or `url <pattern>`; '#' starts a comment."""
        if path is None or not Path(path).exists():
            return cls()
        hosts, urls = [], []
        for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            kind, _, pattern = line.partition(" ")
            if kind == "host" and pattern.strip():
                hosts.append(pattern.strip().lower())
            elif kind == "url" and pattern.strip():
                urls.append(pattern.strip())
            else:
                raise ValueError(f"{path}:{number}: expected 'host <pattern>' or 'url <pattern>': {raw!r}")
        return cls(tuple(hosts), tuple(urls))

    def reason(self, url: str, host: str) -> DropReason | None:
        if self.hosts and self._host_blocked(host):
            return DropReason.BLOCKLIST_HOST
        if self._url_regex is not None and self._url_regex.match(url):
            return DropReason.BLOCKLIST_URL
        return None

    def _host_blocked(self, host: str) -> bool:
        blocked = self._host_verdicts.get(host)
        if blocked is None:
            blocked = any(host_matches(host, p) for p in self.hosts)
            if len(self._host_verdicts) < 1 << 16:  # a runaway list of hosts is just not kept
                self._host_verdicts[host] = blocked
        return blocked


def url_patterns_regex(patterns: tuple[str, ...]) -> re.Pattern:
    """One regex matching what any of the fnmatch patterns matches (case-sensitive, as
    fnmatch is on POSIX), so a link is matched once, not once per pattern."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def query_shape(url: str) -> str | None:
    """The shape of a URL with a query: digits and parameter values blanked, parameter names
    sorted, so /calendar?month=2031-04 and /calendar?month=2099-12 share one shape (a host gets
    max_urls_per_pattern URLs of one shape). Not the change statistics' url_pattern, which
    pools URLs of every kind for their change rates.

    None without a query: /p/1.html ... /p/900.html is an ordinary site, not a trap; endless
    paths are caught by depth, repeated segments and the host growth cap instead."""
    path, _, query = url.partition("?")
    if not query:
        return None
    names = sorted(_PARAM_VALUE.sub("", query).split("&"))
    return _DIGITS.sub("9", path) + "?" + "&".join(names)


def repeated_segments(path: str, max_repeats: int) -> bool:
    """True if any run of 1-3 path segments repeats more than max_repeats times in a row."""
    segments = [s for s in path.split("/") if s]
    if len(set(segments)) == len(segments):
        return False  # no segment occurs twice: nothing can repeat (the common case, checked fast)
    for width in (1, 2, 3):
        run = 1
        for i in range(width, len(segments) - width + 1, width):
            if segments[i:i + width] == segments[i - width:i]:
                run += 1
                if run > max_repeats:
                    return True
            else:
                run = 1
    return False


def query_shapes(urls: pa.Array | pa.ChunkedArray) -> pa.Array:
    """query_shape of each URL in an Arrow array (null for one without a query): the same
    steps over the bytes of every URL with a query at once."""
    return shapes_of(UrlBytes.of(url_array(urls)))


def shapes_of(chars: UrlBytes) -> pa.Array:
    """query_shapes of URLs whose bytes have been searched already."""
    has_query = chars.has_query()
    if not has_query.any():
        return pa.nulls(len(has_query), pa.string())
    marks = chars.query_marks()[has_query]
    paths = digit_runs_as_nine(ByteStrings.cut(chars.data, chars.starts[has_query], marks))
    names = parameter_names(ByteStrings.cut(chars.data, marks + 1, chars.ends[has_query]))
    return paths.joined("?", sorted_names(names)).strings(present=has_query)


def sorted_names(names: ByteStrings) -> ByteStrings:
    """Each string's "&"-separated names sorted. Most are in order already, which their first
    bytes alone show (rising from each name to the next, no empty one after); the rest are sorted."""
    separators = np.flatnonzero(names.data == ord("&"))
    if not len(separators):
        return names
    string_starts = names.bounds[np.searchsorted(names.bounds, separators, "right") - 1]
    name_before = np.maximum(np.append(0, separators[:-1] + 1), string_starts)  # where it starts
    name_after = separators + 1
    data = np.append(names.data, ord("&"))  # (a separator at the end: an empty last name)
    string_ends = names.ends[np.searchsorted(names.ends, separators, "right")]
    # (an empty name before: its "&" is compared, lower than most first bytes; fine either way)
    rising = (name_after < string_ends) & (data[name_after] != ord("&")) & (data[name_before] < data[name_after])
    if rising.all():
        return names
    return ByteStrings.of(pc.binary_join(sorted_within(pc.split_pattern(names.strings(), "&")), "&"))


def digit_runs_as_nine(paths: ByteStrings) -> ByteStrings:
    """_DIGITS.sub("9", path) of each string: a run of digits is its first byte, made a 9."""
    digit = (paths.data >= ord("0")) & (paths.data <= ord("9"))
    run_goes_on = digit.copy()
    run_goes_on[1:] &= digit[:-1]
    run_goes_on[paths.starts[paths.starts < len(digit)]] = False  # (a string's first byte begins a run)
    data = paths.data.copy()
    data[digit] = ord("9")
    return ByteStrings(data, paths.bounds).without(np.flatnonzero(run_goes_on))


def parameter_names(queries: ByteStrings) -> ByteStrings:
    """_PARAM_VALUE.sub("", query) of each string: the bytes from an "=" up to the next "&"
    (or the string's end) go."""
    equals = np.flatnonzero(queries.data == ord("="))
    ampersands = np.append(np.flatnonzero(queries.data == ord("&")), len(queries.data))
    ends = queries.ends[np.searchsorted(queries.ends, equals, "right")]  # of each "="'s string
    stops = np.minimum(ampersands[np.searchsorted(ampersands, equals)], ends)
    first = np.ones(len(equals), bool)  # an "=" within a value already going is in it
    first[1:] = stops[1:] != stops[:-1]
    return queries.without(ByteStrings.cut(np.arange(len(queries.data)), equals[first], stops[first]).data)


def repeated_path_segments(chars: UrlBytes, asked: np.ndarray, max_repeats: int) -> tuple[np.ndarray, np.ndarray]:
    """repeated_segments(path_of(url), max_repeats) of the asked URLs (each with three slashes
    or more): which repeat, and which are left unsure for the scalar rule (those whose first
    slash does not begin their "://"; no normalised URL)."""
    slashes, urls = chars.positions("/"), np.flatnonzero(asked)
    first = np.searchsorted(slashes, chars.starts[urls])  # each URL's first slash, in slashes
    colon_slash, slash, authority_end = slashes[first], slashes[first + 1], slashes[first + 2]
    marks = chars.query_marks()[urls]
    plain = ((colon_slash > chars.starts[urls]) & (chars.data[colon_slash - 1] == ord(":"))
             & (slash == colon_slash + 1) & (slash < marks))
    unsure = np.zeros(len(chars.starts), bool)
    unsure[urls[~plain & (colon_slash < marks)]] = True  # (a first slash past the query: no path)
    with_path = plain & (authority_end < marks)
    ids, owners = path_segment_ids(chars, first[with_path] + 2, marks[with_path])
    repeated = np.zeros(len(chars.starts), bool)
    repeated[urls[with_path][repeating_runs(ids, owners, int(with_path.sum()), max_repeats)]] = True
    return repeated, unsure


def path_segment_ids(chars: UrlBytes, first_slash: np.ndarray, marks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty segments of paths as ids (equal segments, equal ids) and the path each is
    of. Path i runs from slash first_slash[i] (a place in chars.positions("/")) to marks[i]: a
    segment from each of its slashes to the next slash, or to the mark for its last."""
    slashes = chars.positions("/")
    within = np.searchsorted(slashes, marks) - first_slash  # each path's slashes
    slash_at = spans(first_slash, first_slash + within)
    starts, ends = slashes[slash_at] + 1, np.append(slashes, 0)[slash_at + 1]
    ends[np.cumsum(within) - 1] = marks
    filled = ends > starts
    segments = ByteStrings.cut(chars.data, starts[filled], ends[filled]).strings()
    return pc.dictionary_encode(segments).indices.to_numpy(), np.repeat(np.arange(len(marks)), within)[filled]


def repeating_runs(ids: np.ndarray, owners: np.ndarray, lists: int, max_repeats: int) -> np.ndarray:
    """repeated_segments over lists of segment ids given flat (owners: each id's list, in
    order): for each width of 1-3, aligned blocks compared with the block before them."""
    place = np.arange(len(ids)) - np.searchsorted(owners, owners)  # each id's place in its list
    found = np.zeros(lists, bool)
    longest = place.max(initial=-1) + 1
    for width in (1, 2, 3):
        if longest < width * (max(max_repeats, 1) + 1):
            break  # (no list has the blocks a run of this width needs)
        starts = (place % width == 0) & (place >= width)  # of a block with one before it
        equal, owner = blocks_equal(ids, owners, width)[starts], owners[starts]
        run = equal.copy()  # max_repeats equal blocks in a row: a run longer than max_repeats
        for k in range(1, max_repeats):
            run[k:] &= equal[:-k] & (owner[k:] == owner[:-k])
            run[:k] = False
        found[owner[run]] = True
    return found


def blocks_equal(ids: np.ndarray, owners: np.ndarray, width: int) -> np.ndarray:
    """Whether the width ids from each place on equal the width ids before them, in one list."""
    same = np.zeros(len(ids), bool)  # equal to the id width places before, in the same list
    same[width:] = (ids[width:] == ids[:-width]) & (owners[width:] == owners[:-width])
    equal = same.copy()
    for k in range(1, width):
        equal[:-k] &= same[k:]
        equal[-k:] = False
    return equal


@dataclass(frozen=True)
class TrapLimits:
    """The trap defences' limits; the defaults are CrawlSettings' (written there once)."""

    max_url_length: int = CrawlSettings.max_url_length
    max_query_params: int = CrawlSettings.max_query_params
    max_path_repeats: int = CrawlSettings.max_path_repeats
    max_urls_per_pattern: int = CrawlSettings.max_urls_per_pattern
    # A host is capped when its distinct new URLs exceed this multiple of its fetched pages
    # (and at least growth_min_urls): it spawns links faster than anyone could fetch them.
    growth_ratio: float = CrawlSettings.host_growth_ratio
    growth_min_urls: int = CrawlSettings.host_growth_min_urls

    @classmethod
    def from_settings(cls, settings: CrawlSettings) -> "TrapLimits":
        return cls(settings.max_url_length, settings.max_query_params, settings.max_path_repeats,
                   settings.max_urls_per_pattern, settings.host_growth_ratio, settings.host_growth_min_urls)


@dataclass
class TrapDefences:
    limits: TrapLimits = field(default_factory=TrapLimits)
    blocklist: Blocklist = field(default_factory=Blocklist)
    demoted_hosts: frozenset[str] = frozenset()  # hosts that mostly produce near-duplicates
    dropped: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # host -> reason -> n
    _per_pattern: Counter = field(default_factory=Counter)
    _new_urls: dict[str, HyperLogLog] = field(default_factory=dict)
    _fetched: Counter = field(default_factory=Counter)
    _updates: Counter = field(default_factory=Counter)
    capped_hosts: set[str] = field(default_factory=set)

    def intrinsic_reason(self, url: str, host: str) -> DropReason | None:
        """Defences that depend on the URL alone (and the blocklist). Called for every known
        URL by the frontier and every link by the fetch batch: the cheap checks go first."""
        limits = self.limits
        if len(url) > limits.max_url_length:
            return DropReason.URL_TOO_LONG
        query = url.partition("?")[2]
        if query and query.count("&") >= limits.max_query_params:  # count("&") + 1 parameters
            return DropReason.TOO_MANY_QUERY_PARAMS
        path = path_of(url)
        # A run of more than max_path_repeats segments needs at least that many slashes.
        if path.count("/") >= limits.max_path_repeats and repeated_segments(path, limits.max_path_repeats):
            return DropReason.REPEATED_PATH_SEGMENTS
        if self.blocklist.hosts or self.blocklist.url_patterns:
            return self.blocklist.reason(url, host)
        return None

    def intrinsic_reasons(self, urls: pa.Array | pa.ChunkedArray, hosts: pa.Array | pa.ChunkedArray) -> pa.Array:
        """intrinsic_reason of each URL over Arrow arrays (null: none). Length, query parameters
        and repeated segments (for the URLs with enough slashes: scheme:// and the host's slash
        add three) are judged over the whole array; the scalar rule is asked about the URLs
        repeated_path_segments leaves unsure, or every one still open when there is a blocklist."""
        urls = url_array(urls)
        return self.reasons_of(urls, UrlBytes.of(urls), hosts)

    def url_rules(self, urls: pa.Array | pa.ChunkedArray, hosts: pa.Array | pa.ChunkedArray) -> pa.StructArray:
        """intrinsic_reasons (trap) and query_shapes (query_shape) of the same URLs at once: the
        frontier asks both of every known URL, and each call costs a batch's search for "?"."""
        urls = url_array(urls)
        chars = UrlBytes.of(urls)
        return pa.StructArray.from_arrays([self.reasons_of(urls, chars, hosts), shapes_of(chars)],
                                          names=["trap", "query_shape"])

    def reasons_of(self, urls: pa.Array, chars: UrlBytes, hosts: pa.Array | pa.ChunkedArray) -> pa.Array:
        """intrinsic_reasons of URLs whose bytes have been searched already (chars)."""
        limits = self.limits
        too_long = np.diff(chars.bounds) > limits.max_url_length  # (bytes: at least the characters)
        if too_long.any():
            too_long = pc.utf8_length(urls).to_numpy() > limits.max_url_length
        many_params = chars.has_query() & (chars.count_in_query("&") >= limits.max_query_params)
        open_urls = ~too_long & ~many_params
        repeated = np.zeros(len(urls), bool)
        if self.blocklist.hosts or self.blocklist.url_patterns:
            asked = open_urls
        else:
            asked = open_urls & (chars.count("/") >= limits.max_path_repeats + 3)
            if asked.any():
                repeated, asked = repeated_path_segments(chars, asked, limits.max_path_repeats)
        reasons = np.zeros(len(urls), np.int8)  # places in REASONS (0: none)
        reasons[repeated] = REASON_PLACES[DropReason.REPEATED_PATH_SEGMENTS]
        reasons[many_params] = REASON_PLACES[DropReason.TOO_MANY_QUERY_PARAMS]
        reasons[too_long] = REASON_PLACES[DropReason.URL_TOO_LONG]
        if asked.any():
            answers = map(self.intrinsic_reason, pc.filter(urls, asked).to_pylist(),
                          pc.filter(hosts, asked).to_pylist())
            reasons[asked] = [REASON_PLACES[answer] for answer in answers]
        return REASONS.take(reasons) if reasons.any() else pa.nulls(len(urls), pa.string())


    def reason(self, url: str, host: str) -> DropReason | None:
        """Why this newly discovered URL must not be queued, or None; counts the drop."""
        reason = self.intrinsic_reason(url, host)
        if reason is None and host in self.demoted_hosts:
            reason = DropReason.DEMOTED_HOST
        if reason is None and host in self.capped_hosts:
            reason = DropReason.HOST_GROWTH_CAPPED
        pattern = query_shape(url) if reason is None else None
        if pattern is not None:
            key = (host, pattern)
            if self._per_pattern[key] >= self.limits.max_urls_per_pattern:
                reason = DropReason.PATTERN_BUDGET
            else:
                self._per_pattern[key] += 1
        if reason is not None:
            self.dropped[host][reason] += 1
        return reason

    @staticmethod
    def load_growth_sketches() -> None:
        """Import the growth sketches' library now (scipy comes with it: a second of CPU, far
        more on a busy machine) rather than at the first new URL, inside the fetch engine's
        event loop, where answers would wait on it."""
        from datasketch import HyperLogLog  # noqa: PLC0415, F401

    def observe_new_url(self, host: str, url: str) -> None:
        """A URL this host links to that the crawl had never seen: track the host's growth."""
        sketch = self._new_urls.get(host)
        if sketch is None:
            from datasketch import HyperLogLog  # noqa: PLC0415 (imported where first needed)

            sketch = self._new_urls[host] = HyperLogLog(p=8)
        sketch.update(url.encode("utf-8"))
        self._updates[host] += 1
        if self._updates[host] % 64 == 0:  # counting a sketch costs more than updating it
            self._check_growth(host)

    def observe_fetch(self, host: str) -> None:
        self._fetched[host] += 1

    def new_url_estimate(self, host: str) -> int:
        sketch = self._new_urls.get(host)
        return int(sketch.count()) if sketch is not None else 0

    def _check_growth(self, host: str) -> None:
        if host in self.capped_hosts:
            return
        new_urls = self.new_url_estimate(host)
        if new_urls >= self.limits.growth_min_urls and \
                new_urls > self.limits.growth_ratio * max(self._fetched[host], 1):
            self.capped_hosts.add(host)
