"""Small PNG pictures for the day report, where a picture reads better than numbers: the status
mix of every day so far (stacked bars) and the histogram of estimated change rates.
matplotlib draws them off-screen (the Agg backend: no display, no GUI toolkit)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

SIZE_IN = (6.4, 3.2)
DPI = 80  # about 500 x 250 pixels: small enough to embed in the day's metadata
MIN_BAR_SLOTS = 7  # the x axis holds at least a week
MIN_RATE_SPAN = 4.0  # the histogram's x axis spans at least this factor
RATE_TICKS = 5  # labelled ticks on its x axis, evenly spaced on the log scale


def _pyplot():
    """matplotlib's pyplot on the Agg backend, imported when a picture is drawn: importing it
    is slow, and every run's process loads these definitions."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: files only, never a window
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    plt = _pyplot()
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def status_mix_png(status_mix: pa.Table) -> bytes:
    """Stacked bars: pages per status class (date, status_class, pages rows), one bar a day."""
    rows = status_mix.to_pylist()
    days = sorted({r["date"] for r in rows})
    classes = sorted({r["status_class"] for r in rows})
    pages = {(r["date"], r["status_class"]): r["pages"] for r in rows}
    figure, axes = _pyplot().subplots(figsize=SIZE_IN)
    bottom = np.zeros(len(days))
    for name in classes:
        heights = np.array([pages.get((day, name), 0) for day in days], dtype=float)
        axes.bar(range(len(days)), heights, bottom=bottom, label=name, width=0.7)
        bottom += heights
    axes.set_xlim(-0.6, max(len(days), MIN_BAR_SLOTS) - 0.4)  # a first day is a bar, not a wall
    axes.set_ylabel("fetch-log rows")
    axes.set_title("Status mix per day")
    axes.set_xticks(range(len(days)), days, rotation=45, fontsize=7, ha="right")
    if classes:
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(figure)


def rate_bin_edges(values: np.ndarray, bins: int) -> np.ndarray:
    """Log-spaced bin edges over the rates. On a first day every URL has its pattern's prior, often
    one rate for all: the range is widened to a factor of four around it (a bar between readable
    ticks, not a sliver under overprinted ones)."""
    low, high = float(values.min()), float(values.max())
    if high < low * MIN_RATE_SPAN:
        middle = np.sqrt(low * high)
        low, high = middle / np.sqrt(MIN_RATE_SPAN), middle * np.sqrt(MIN_RATE_SPAN)
        bins = min(bins, 8)
    return np.logspace(np.log10(low), np.log10(high), bins + 1)


def change_rate_png(rates: Sequence[float], bins: int = 30) -> bytes:
    """Histogram of estimated changes a day per URL (log scale: rates span orders of magnitude)."""
    values = np.asarray([r for r in rates if r is not None and r > 0], dtype=float)
    figure, axes = _pyplot().subplots(figsize=SIZE_IN)
    if values.size:
        edges = rate_bin_edges(values, bins)
        axes.hist(values, bins=edges)
        axes.set_xscale("log")
        axes.minorticks_off()  # matplotlib labels minor ticks on a short log axis, over each other
        ticks = np.geomspace(edges[0], edges[-1], RATE_TICKS)
        axes.set_xticks(ticks, [f"{t:.2g}" for t in ticks], fontsize=8)
    else:
        axes.text(0.5, 0.5, "no change rates yet", ha="center", va="center", transform=axes.transAxes)
    axes.set_xlabel("estimated changes a day")
    axes.set_ylabel("URLs")
    axes.set_title(f"Change rates of {values.size:,} URLs")
    return _png(figure)
