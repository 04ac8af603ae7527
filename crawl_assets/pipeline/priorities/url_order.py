"""The priorities step's rows in URL order, without sorting 10M URL strings.

The known URLs come in URL order (recrawl_inputs.known_urls sorts them; any other order is
sorted once here). DuckDB joins them with change_stats' URLs on hashes and returns the rows
in no order, each known row with its place in known_urls; UrlOrder puts every column in URL
order by that place, and merges in the few URLs that only change_stats has (fetched once, no
longer linked) by a binary search among the known URLs. The URL is the plan's last
tie-breaker and the output file's order, so this order must be exactly the byte order of
the URLs (DuckDB's ORDER BY).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...crawler.runtime import NUMPY_THREADS


def in_url_order(known_urls: pa.Table) -> pa.Table:
    """known_urls (url, host[, inlinks][, listing][, leads]) in URL order (byte order, as DuckDB's ORDER BY),
    sorted here unless it already is. A URL listed twice is an error: it would be planned
    twice (in URL order a repeat sits next to itself)."""
    columns = [c for c in ("url", "host", "inlinks", "listing", "leads") if c in known_urls.column_names]
    known = known_urls.select(columns)
    if _strictly_increasing(known["url"]):
        return known
    known = known.take(pc.sort_indices(known["url"]))
    urls = known["url"]
    if len(urls) > 1 and pc.any(pc.equal(urls[1:], urls[:-1])).as_py():
        repeated = pc.filter(urls[1:], pc.equal(urls[1:], urls[:-1]))[0].as_py()
        raise ValueError(f"known_urls lists {repeated!r} more than once: pass one row per URL "
                         "(recrawl_inputs.known_urls groups them)")
    return known


def _strictly_increasing(urls: pa.ChunkedArray) -> bool:
    return len(urls) < 2 or (urls.null_count == 0 and pc.all(pc.less(urls[:-1], urls[1:])).as_py())


class UrlOrder:
    """The rows of a join with the known URLs put in URL order: the known URLs (in URL order
    already) with the URLs only the other side has merged in among them.

    url, host: the URLs' names in URL order; columns: the pages' numbers in that order;
    known(values): a known_urls column in that order, 0 for the URLs only change_stats has."""

    def __init__(self, known: pa.Table, pages: dict, extras: pa.Table):
        """pages: the join's columns, consumed (each is dropped once placed): `pos`, each row's
        row in `known` (null for a URL only the other side has), and numbers; its columns k1
        and k2 are dropped. extras: (row, url, host) of the rows with no `pos`, by URL."""
        n_known, n_extra = len(known), len(extras)
        pos = pc.fill_null(pages.pop("pos"), -1).to_numpy()
        if len(pos) != n_known + n_extra:
            raise ValueError("change_stats lists a URL more than once: pass change_stats' own output "
                             "(one row per URL)")
        source = np.empty(len(pos), dtype=np.int64)  # each row in URL order: its row of pages
        if n_extra == 0:
            source[pos] = np.arange(len(pos))
            self.url, self.host, self._known_row = known["url"], known["host"], None
        else:
            # A known URL moves down by the unknown URLs that sort before it; an unknown URL
            # goes after the known URLs that sort before it, plus its rank among the unknown.
            before = _count_less(known["url"], extras["url"])
            known_rows = np.flatnonzero(pos >= 0)
            known_pos = pos[known_rows]
            known_place = known_pos + np.searchsorted(before, known_pos, side="right")
            extra_place = before + np.arange(n_extra)
            source[known_place] = known_rows
            source[extra_place] = extras["row"].to_numpy()
            self._known_row = np.full(len(pos), -1, dtype=np.int64)
            self._known_row[known_place] = known_pos
            names = np.empty(len(pos), dtype=np.int64)  # in the known names, then the unknown ones
            names[known_place] = known_pos
            names[extra_place] = n_known + np.arange(n_extra)
            self.url = pa.chunked_array([*known["url"].chunks, *extras["url"].chunks]).take(names)
            extra_hosts = extras["host"].cast(known.schema.field("host").type)
            self.host = pa.chunked_array([*known["host"].chunks, *extra_hosts.chunks]).take(names)
        del pos
        for name in ("k1", "k2"):
            pages.pop(name)

        def gather(name):  # each column is freed once gathered (10M long)
            return name, np.take(pages.pop(name).to_numpy(), source)

        with ThreadPoolExecutor(NUMPY_THREADS) as pool:  # numpy releases the GIL in np.take
            self.columns = dict(pool.map(gather, list(pages)))

    def known(self, values: np.ndarray) -> np.ndarray:
        if self._known_row is None:
            return values
        ordered = values[np.maximum(self._known_row, 0)]
        ordered[self._known_row < 0] = 0
        return ordered


def _count_less(sorted_urls: pa.ChunkedArray, urls: pa.ChunkedArray) -> np.ndarray:
    """For each of `urls`, how many of `sorted_urls` (increasing) sort before it: a binary
    search run for all of them at once (one vectorised comparison a step)."""
    lo = np.zeros(len(urls), dtype=np.int64)
    hi = np.full(len(urls), len(sorted_urls), dtype=np.int64)
    while len(urls) and (lo < hi).any():
        open_ = lo < hi
        mid = (lo + hi) // 2
        probe = sorted_urls.take(np.minimum(mid, max(len(sorted_urls) - 1, 0)))
        below = open_ & pc.less(probe, urls).to_numpy(zero_copy_only=False)
        lo = np.where(below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    return lo


def host_numbers(host: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """The distinct hosts in host order, and each row's host as its number in that order. In
    URL order a host's rows come in runs: only the first row of each run is looked up."""
    if len(host) == 0:
        return pa.array([], host.type), np.zeros(0, dtype=np.int64)
    moved = pc.fill_null(pc.not_equal(host[1:], host[:-1]), True).to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, moved])
    encoded = pc.dictionary_encode(host.take(starts).combine_chunks(), null_encoding="encode")
    in_order = pc.array_sort_indices(encoded.dictionary, null_placement="at_end").to_numpy()
    number = np.empty(len(in_order), dtype=np.int64)
    number[in_order] = np.arange(len(in_order))
    run_number = number[encoded.indices.to_numpy(zero_copy_only=False)]
    return encoded.dictionary.take(in_order), np.repeat(run_number, np.diff(np.r_[starts, len(host)]))
