"""url_order: rows of a join with the known URLs put in URL order without sorting the URLs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from crawl_assets.pipeline.priorities.url_order import UrlOrder, host_numbers, in_url_order


def known_table(urls):
    return pa.table({"url": urls, "host": [u.split("/")[2] for u in urls], "inlinks": list(range(len(urls)))})


def test_known_urls_are_sorted_once_and_a_repeat_is_an_error():
    urls = ["https://b.test/2", "https://a.test/1", "https://b.test/1"]
    assert in_url_order(known_table(urls))["url"].to_pylist() == sorted(urls)
    with pytest.raises(ValueError, match="lists 'https://a.test/1' more than once"):
        in_url_order(known_table(urls + ["https://a.test/1"]))


def test_rows_in_any_order_come_out_in_url_order_with_the_extra_urls_merged_in():
    rng = np.random.default_rng(3)
    known_urls = sorted({f"https://h{rng.integers(5)}.test/{rng.integers(10**6)}" for _ in range(2000)})
    extra_urls = sorted({f"https://h{rng.integers(5)}.test/{rng.integers(10**6)}x" for _ in range(300)}
                        | {"https://0.test/first", "https://zz.test/last"})
    known = known_table(known_urls)
    # The join's rows: every known URL (pos) and every extra one (no pos), shuffled, with a
    # number that says which URL each row is.
    every = known_urls + extra_urls
    tag = {u: float(i) for i, u in enumerate(every)}
    rows = [(i, tag[u]) for i, u in enumerate(known_urls)] + [(None, tag[u]) for u in extra_urls]
    order = rng.permutation(len(rows))
    pos = pa.array([rows[i][0] for i in order], pa.int64())
    value = np.array([rows[i][1] for i in order])
    extra_rows = [r for r, i in enumerate(order) if rows[i][0] is None]
    extras = pa.table({"row": extra_rows, "url": [every[int(value[r])] for r in extra_rows],
                       "host": [every[int(value[r])].split("/")[2] for r in extra_rows]}).sort_by("url")
    placed = UrlOrder(known, {"pos": pos, "k1": pa.nulls(len(pos)), "k2": pa.nulls(len(pos)),
                              "value": pa.array(value)}, extras)
    assert placed.url.to_pylist() == sorted(every)
    assert placed.host.to_pylist() == [u.split("/")[2] for u in sorted(every)]
    assert [every[int(v)] for v in placed.columns["value"]] == sorted(every)
    # known_urls' own column (here: each URL's row) in that order, 0 for the extra URLs
    row_of = {u: i for i, u in enumerate(known_urls)}
    assert list(placed.known(known["inlinks"].to_numpy())) == [row_of.get(u, 0) for u in sorted(every)]


def test_a_url_twice_on_the_other_side_is_an_error():
    known = known_table(["https://a.test/1"])
    pages = {"pos": pa.array([0, 0], pa.int64()), "k1": pa.nulls(2), "k2": pa.nulls(2)}
    empty = pa.table({"row": pa.array([], pa.int64()), "url": pa.array([], pa.string()),
                      "host": pa.array([], pa.string())})
    with pytest.raises(ValueError, match="more than once"):
        UrlOrder(known, pages, empty)


def test_host_numbers_follow_host_order_across_runs():
    hosts = pa.chunked_array([["b.test", "b.test", "a.test"], ["a.test", "c.test", "b.test"]])
    names, numbers = host_numbers(hosts)
    assert names.to_pylist() == ["a.test", "b.test", "c.test"]
    assert list(numbers) == [1, 1, 0, 0, 2, 1]
