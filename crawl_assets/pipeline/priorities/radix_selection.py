"""Order statistics of numbers held in parts (shards) that no process holds at once: radix
selection on the floats' bits, 16 bits a pass over the parts (four passes), counting 65,536
digits at a time; each part's values asked for again on the first two passes (values_of(i)),
the last two reading only the values that still match."""

from __future__ import annotations

import numpy as np

_DIGIT_BITS = 16


def median_of_parts(values_of, parts: int) -> float | None:
    """The median (as DuckDB's median(): lo + (hi - lo) / 2) of the values of every part (no
    NaN), None for none."""
    total = sum(len(values_of(i)) for i in range(parts))
    if total == 0:
        return None
    lo, hi = (smallest_of_parts(values_of, parts, k) for k in ((total - 1) // 2, total // 2))
    return float(lo + (hi - lo) * 0.5)


_SIGN = np.uint64(1 << 63)


def smallest_of_parts(values_of, parts: int, k: int) -> float:
    """The k-th smallest (from 0) of the parts' values (no NaN; -0.0 counts below 0.0)."""
    prefix, fixed = 0, 0  # the key's high `fixed` bits, found so far
    kept: list[np.ndarray] | None = None  # each part's keys with those bits, from the second pass on
    for shift in range(64 - _DIGIT_BITS, -1, -_DIGIT_BITS):
        counts = np.zeros(1 << _DIGIT_BITS, dtype=np.int64)
        matching = []
        for i in range(parts):
            keys = _order_keys(values_of(i)) if kept is None else kept[i]
            if fixed:
                keys = keys[(keys >> np.uint64(64 - fixed)) == np.uint64(prefix)]
                matching.append(keys)
            digits = (keys >> np.uint64(shift)) & np.uint64((1 << _DIGIT_BITS) - 1)
            counts += np.bincount(digits.astype(np.int64), minlength=1 << _DIGIT_BITS)
        # (past the first 16 bits, the values left share the answer's sign, exponent and first
        # mantissa bits: few enough to keep, so the parts are read twice, not four times)
        kept = matching if fixed else None
        below = np.cumsum(counts)
        digit = int(np.searchsorted(below, k, side="right"))
        k -= int(below[digit - 1]) if digit else 0
        prefix, fixed = (prefix << _DIGIT_BITS) | digit, fixed + _DIGIT_BITS
    key = np.array([prefix], dtype=np.uint64)
    bits = np.where(key & _SIGN, key ^ _SIGN, ~key)  # (_order_keys undone)
    return float(bits.view(np.float64)[0])


def _order_keys(values: np.ndarray) -> np.ndarray:
    """Unsigned keys in the floats' order: the sign bit set for positives, every bit flipped
    for negatives."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)
