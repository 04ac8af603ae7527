"""Order statistics over parts no process holds at once (radix_selection.py) are numpy's, for
every rank: values that share their first 16 bits or all their bits (the passes past the first
two read only the values still matching), negatives, zeros of both signs, empty parts."""

from __future__ import annotations

import numpy as np
import pytest

from crawl_assets.pipeline.priorities.radix_selection import median_of_parts, smallest_of_parts


def crawls():
    rng = np.random.default_rng(4)
    yield rng.normal(0, 1, 500)  # negatives and positives
    yield 1.0 + rng.random(500) * 1e-3  # one sign, exponent and first mantissa bits: a subset kept
    yield np.repeat([0.25, 0.5, 3.0], 200)  # ties only
    yield np.r_[np.zeros(50), -np.zeros(50), -rng.lognormal(0, 3, 300)]  # 0.0 and -0.0
    yield rng.exponential(1.0, 501)  # an odd count: the median is one value, not two halves


@pytest.mark.parametrize("parts", [1, 3, 7])
def test_the_kth_smallest_over_parts_is_numpys(parts):
    for values in crawls():
        split = np.array_split(np.random.default_rng(parts).permutation(values), parts)
        split.append(np.zeros(0))  # a part without values
        ordered = np.sort(values)
        for k in range(0, len(values), 7):
            assert smallest_of_parts(lambda i: split[i], len(split), k) == ordered[k], k
        assert median_of_parts(lambda i: split[i], len(split)) == pytest.approx(np.median(values), abs=1e-12)


def test_no_values_have_no_median():
    assert median_of_parts(lambda i: np.zeros(0), 3) is None


def test_each_part_is_read_twice_however_many_passes():
    """The first pass counts every value's first 16 bits, the second keeps the values still
    matching them; the last two passes read only those, not the parts again (at 100 million
    URLs each read of a shard's gains is a read of its files)."""
    values = np.random.default_rng(5).random(3_000)
    split = np.array_split(values, 4)
    reads = [0] * len(split)

    def values_of(i):
        reads[i] += 1
        return split[i]

    assert smallest_of_parts(values_of, len(split), 1_234) == np.sort(values)[1_234]
    assert reads == [2, 2, 2, 2]
