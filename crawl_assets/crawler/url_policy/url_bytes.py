"""Arrow arrays of URLs searched and cut as bytes, for the trap rules' array forms.

The frontier judges every known URL, millions a day, in batches of 2,048 (DuckDB's vector).
A Python call per URL, a regex kernel or a pyarrow substring kernel each cost about a
microsecond a URL; a numpy pass over a batch's bytes costs nanoseconds a URL, and each call
(numpy or pyarrow) some microseconds a batch, so the forms here take few steps. The
characters the rules look for ("?", "&", "=", "/", ":", ASCII digits) are never part of a
multi-byte UTF-8 character, so pieces cut at them are valid UTF-8.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def url_array(urls: pa.Array | pa.ChunkedArray) -> pa.Array:
    urls = urls.combine_chunks() if isinstance(urls, pa.ChunkedArray) else urls
    assert urls.null_count == 0, "URLs are never null"
    return urls if urls.type == pa.string() else urls.cast(pa.string())


@dataclass(frozen=True)
class ByteStrings:
    """Strings as bytes: string i is data[bounds[i]:bounds[i + 1]]."""

    data: np.ndarray  # uint8
    bounds: np.ndarray  # int64 (searchsorted is slow across types)

    @classmethod
    def of(cls, strings: pa.Array) -> "ByteStrings":
        _, offsets, data = strings.buffers()
        bounds = np.frombuffer(offsets, np.int32)[strings.offset:strings.offset + len(strings) + 1].astype(np.int64)
        return cls(np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8), bounds)

    @classmethod
    def cut(cls, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> "ByteStrings":
        """The pieces data[starts[i]:ends[i]], copied out one after another."""
        return cls(data[spans(starts, ends)], np.concatenate(([0], np.cumsum(ends - starts))))

    @property
    def starts(self) -> np.ndarray:
        return self.bounds[:-1]

    @property
    def ends(self) -> np.ndarray:
        return self.bounds[1:]

    def without(self, dropped: np.ndarray) -> "ByteStrings":
        """The strings without the bytes at the places dropped (in order)."""
        kept = np.ones(len(self.data), bool)
        kept[dropped] = False
        return ByteStrings(self.data[kept], self.bounds - np.searchsorted(dropped, self.bounds))

    def joined(self, separator: str, other: "ByteStrings") -> "ByteStrings":
        """Each string, separator and the other's string of the same place."""
        data = np.concatenate((self.data, np.frombuffer(separator.encode(), np.uint8), other.data))
        after = len(self.data) + len(separator)
        starts = np.stack((self.starts, np.full(len(self.starts), len(self.data)), other.starts + after), 1)
        ends = np.stack((self.ends, np.full(len(self.ends), after), other.ends + after), 1)
        pieces = ByteStrings.cut(data, starts.ravel(), ends.ravel())
        return ByteStrings(pieces.data, pieces.bounds[::3])

    def strings(self, present: np.ndarray | None = None) -> pa.Array:
        """An Arrow array of the strings, or with present: one row each, null where it is False
        and the strings in order where it is True."""
        if present is None:
            return pa.Array.from_buffers(pa.string(), len(self.starts), [
                None, pa.py_buffer(self.bounds.astype(np.int32)), pa.py_buffer(self.data)])
        bounds = np.zeros(len(present) + 1, np.int32)
        bounds[1:][present] = np.diff(self.bounds)
        np.cumsum(bounds, out=bounds)
        valid = pa.py_buffer(np.packbits(present, bitorder="little"))
        return pa.Array.from_buffers(pa.string(), len(present), [valid, pa.py_buffer(bounds), pa.py_buffer(self.data)],
                                     null_count=len(present) - int(present.sum()))


@dataclass(frozen=True)
class UrlBytes(ByteStrings):
    """The UTF-8 bytes of an Arrow array of URLs, searched for the characters the rules count."""

    found: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)  # searched once

    def positions(self, char: str) -> np.ndarray:
        """Where char occurs, in order."""
        if char not in self.found:
            self.found[char] = np.flatnonzero(self.data == ord(char))
        return self.found[char]

    def count(self, char: str) -> np.ndarray:
        """How many times each URL holds char."""
        return np.diff(np.searchsorted(self.positions(char), self.bounds))

    def query_marks(self) -> np.ndarray:
        """Where each URL's first "?" is, or its end for a URL without one."""
        if "marks" not in self.found:
            marks = np.append(self.positions("?"), len(self.data))  # (the last: past every URL's end)
            self.found["marks"] = np.minimum(marks[np.searchsorted(marks, self.starts)], self.ends)
        return self.found["marks"]

    def has_query(self) -> np.ndarray:
        """Whether each URL has a non-empty query: anything after its first "?"."""
        return self.query_marks() + 1 < self.ends

    def count_in_query(self, char: str) -> np.ndarray:
        """How many times each URL holds char after its first "?"."""
        found = self.positions(char)
        return np.searchsorted(found, self.ends) - np.searchsorted(found, self.query_marks())


def spans(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Every index from starts[i] up to ends[i], for each i in turn."""
    lengths = ends - starts
    before = np.cumsum(lengths) - lengths  # how many come before span i
    # Place k is index k + (the start of its span - how many come before that span).
    return np.arange(before[-1] + lengths[-1] if len(lengths) else 0) + np.repeat(starts - before, lengths)


def sorted_within(lists: pa.ListArray) -> pa.ListArray:
    """Each list's strings in byte order (for UTF-8: Python's order of the same str); the
    lists as they are when each is in order already."""
    values, owners = lists.flatten(), pc.list_parent_indices(lists).to_numpy()
    if len(values) < 2:
        return lists
    descending = pc.less(values.slice(1), values.slice(0, len(values) - 1)).to_numpy(zero_copy_only=False)
    if not (descending & (owners[1:] == owners[:-1])).any():
        return lists
    order = pc.sort_indices(pa.table({"owner": owners, "value": values}),
                            sort_keys=[("owner", "ascending"), ("value", "ascending")])
    offsets = pc.subtract(lists.offsets, lists.offsets[0])  # a slice's offsets start past 0, its values at 0
    return pa.ListArray.from_arrays(offsets, values.take(order))
