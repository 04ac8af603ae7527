"""Arrow arrays of URLs as bytes (crawler/url_policy/url_bytes.py), which the trap rules' array
forms search and cut: each answer checked against the same computed on Python strings."""

import numpy as np
import pyarrow as pa
import pytest

from crawl_assets.crawler.url_policy.url_bytes import ByteStrings, UrlBytes, sorted_within, spans, url_array

URLS = ["http://a.test/?x=1&y=2", "http://b.test/p/q", "http://c.test/?", "https://d.test/é/?q?r&s=&t", "",
        "http://e.test/a&b?", "http://f.test/?x"]


def test_url_array_gives_one_plain_string_array_and_refuses_nulls():
    chunked = pa.chunked_array([URLS[:2], URLS[2:]])
    for given in (chunked, pa.array(URLS, pa.large_string()), pa.array(URLS)):
        urls = url_array(given)
        assert isinstance(urls, pa.Array) and urls.type == pa.string() and urls.to_pylist() == URLS
    with pytest.raises(AssertionError, match="^URLs are never null$"):
        url_array(pa.array(["http://a.test/", None]))


def as_strings(strings: ByteStrings) -> list[str]:
    return [bytes(strings.data[start:end]).decode() for start, end in zip(strings.starts, strings.ends)]


def test_strings_are_read_as_bytes_from_an_array_and_its_slices():
    assert as_strings(ByteStrings.of(pa.array(URLS))) == URLS
    sliced = pa.array(URLS).slice(2, 3)  # an offset into the array's buffers
    strings = ByteStrings.of(sliced)
    assert as_strings(strings) == URLS[2:5] and strings.bounds.dtype == np.int64
    assert strings.strings().to_pylist() == URLS[2:5]
    assert as_strings(ByteStrings.of(pa.array([], pa.string()))) == []


def test_pieces_are_cut_dropped_and_joined_as_python_would():
    strings = ByteStrings.of(pa.array(["abc", "", "défg"]))
    data = strings.data
    pieces = ByteStrings.cut(data, np.array([0, 3, 4, 1]), np.array([2, 3, 7, 3]))
    assert as_strings(pieces) == ["ab", "", "éf", "bc"]
    assert spans(np.array([0, 3, 4, 1]), np.array([2, 3, 7, 3])).tolist() == [0, 1, 4, 5, 6, 1, 2]
    assert spans(np.array([], np.int64), np.array([], np.int64)).tolist() == []
    # "défg" is bytes 3..8 ("é" two bytes: 4 and 5): drop "a", "c" and "g"
    assert as_strings(strings.without(np.array([0, 2, 7]))) == ["b", "", "déf"]
    assert as_strings(strings.without(np.array([], np.int64))) == ["abc", "", "défg"]
    other = ByteStrings.of(pa.array(["x", "yz", ""]))
    assert as_strings(strings.joined("&", other)) == ["abc&x", "&yz", "défg&"]
    assert strings.joined("=", other).strings().to_pylist() == ["abc=x", "=yz", "défg="]


def test_strings_come_back_as_an_arrow_array_with_nulls_where_not_present():
    strings = ByteStrings.of(pa.array(["ab", "", "é"]))
    present = np.array([False, True, True, False, False, False, False, False, False, True, False])  # two bytes' bits
    back = strings.strings(present)
    back.validate(full=True)
    assert back.to_pylist() == [None, "ab", "", None, None, None, None, None, None, "é", None]
    assert back.null_count == 8 and back.type == pa.string()
    every = strings.strings(np.ones(3, bool))
    assert every.null_count == 0 and every.to_pylist() == ["ab", "", "é"]


def python_query_marks(url: str) -> int:
    return url.index("?") if "?" in url else len(url)


def test_each_urls_characters_are_counted_and_found_as_in_python():
    chars = UrlBytes.of(pa.array(URLS))
    encoded = [url.encode() for url in URLS]
    starts = chars.starts
    for char in "&=/":
        assert chars.count(char).tolist() == [url.count(char) for url in URLS], char
        assert chars.positions(char).tolist() == [i for i, byte in enumerate(b"".join(encoded)) if byte == ord(char)]
        assert chars.count_in_query(char).tolist() == [
            url[python_query_marks(url):].count(char) for url in URLS], char
    marks = [len(url[:python_query_marks(url)].encode()) for url in URLS]
    assert (chars.query_marks() - starts).tolist() == marks
    assert chars.has_query().tolist() == [True, False, False, True, False, False, True]  # "?" alone is no query
    assert chars.count("x").tolist() == [1, 0, 0, 0, 0, 0, 1] and chars.count("é").tolist() == [0] * 7  # (é: two bytes)


def test_a_url_without_a_query_mark_ends_its_own_query_even_before_a_later_urls_mark():
    chars = UrlBytes.of(pa.array(["http://a.test/p", "http://b.test/?q=1"]))
    assert chars.query_marks().tolist() == [15, 29] and chars.has_query().tolist() == [False, True]
    assert chars.count_in_query("=").tolist() == [0, 1] and chars.count_in_query("/").tolist() == [0, 0]


def test_each_lists_strings_are_sorted_by_bytes_within_the_list_alone():
    lists = pa.array([["b", "a"], ["a"], [], ["é", "z", "Z", "a"], ["c", "c", "b"]])
    assert sorted_within(lists).to_pylist() == [sorted(values) for values in lists.to_pylist()]
    in_order = pa.array([["a", "b"], ["a"], ["b", "c"]])  # descending only across lists
    assert sorted_within(in_order) is in_order
    # out of order only in a later list, or in a list of two values
    assert sorted_within(pa.array([["a"], ["c", "b"]])).to_pylist() == [["a"], ["b", "c"]]
    assert sorted_within(pa.array([["b", "a"]])).to_pylist() == [["a", "b"]]
    assert sorted_within(pa.array([["a", "a"], [], ["b"]])).to_pylist() == [["a", "a"], [], ["b"]]
    few = pa.array([[], ["z"]])
    assert sorted_within(few) is few
    sliced = pa.array([["z"], ["b", "a"], ["d", "c"]]).slice(1)
    assert sorted_within(sliced).to_pylist() == [["a", "b"], ["c", "d"]]
