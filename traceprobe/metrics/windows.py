"""Many analysis windows at once: the window set, and grouping by window.

``traceprobe analyze --step all`` asks for every figure of every ProfilerStep. Computing
them one window after another costs a few dozen pandas calls per window (≈40 ms), so
10,000 steps would take minutes. Instead the timeline is *cut* once
(:meth:`traceprobe.timeline.Timeline.cut`): each frame holds every event once per window
it falls in, clipped to that window, with the window's index in a ``win`` column. The
metrics then group by ``win`` (one sort, one ``bincount``) and return one result per
window. A frame without a ``win`` column is a single window (index 0), so the same
functions serve the whole-trace report, one ``--step N`` and ``--step all``.

Because a window's rows are exactly the rows :meth:`Timeline.window` keeps for it, every
figure of window ``i`` equals the figure computed on ``timeline.window(lo[i], hi[i])``
alone (tested for every metric).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Windows:
    """The analysis windows ``[lo[i], hi[i])`` (int64 ns), in the order of their index."""

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, bounds: Sequence[tuple[int, int]]) -> Windows:
        return cls(np.asarray([b[0] for b in bounds], np.int64).reshape(-1),
                   np.asarray([b[1] for b in bounds], np.int64).reshape(-1))

    @classmethod
    def one(cls, lo: int, hi: int) -> Windows:
        return cls.of([(lo, hi)])

    @property
    def n(self) -> int:
        return int(self.lo.shape[0])

    @property
    def length(self) -> np.ndarray:
        return self.hi - self.lo


def win_of(df: pd.DataFrame) -> np.ndarray:
    """The window index of each row of ``df`` (all 0 for a frame that was not cut)."""
    if "win" in df.columns:
        return df["win"].to_numpy(dtype=np.int64)
    return np.zeros(len(df), np.int64)


def offsets(sorted_keys: np.ndarray, n: int) -> np.ndarray:
    """``o`` with rows ``o[i]:o[i+1]`` of key ``i``, for keys sorted ascending in ``0..n-1``."""
    return np.searchsorted(sorted_keys, np.arange(n + 1), side="left")


def grouped_sum(values: np.ndarray, gid: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0..n-1``: the sum of its int64 ``values`` (exact, unlike a float bincount)."""
    out = np.zeros(n, np.int64)
    np.add.at(out, gid, np.asarray(values, np.int64))
    return out


def grouped_quantile(values: np.ndarray, gid: np.ndarray, n: int, q: float) -> np.ndarray:
    """Per group ``0..n-1``: ``np.percentile(values[gid == i], q)`` (linear interpolation,
    as numpy's default), NaN for an empty group. One sort for all groups."""
    values = np.asarray(values, dtype=np.float64)
    out = np.full(n, np.nan)
    if not len(values):
        return out
    order = np.lexsort((values, gid))
    v, g = values[order], gid[order]
    o = offsets(g, n)
    size = np.diff(o)
    has = size > 0
    pos = (size[has] - 1) * (q / 100.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, size[has] - 1)
    frac = pos - lo
    a, b = v[o[:-1][has] + lo], v[o[:-1][has] + hi]
    # numpy's own lerp, so that the figures match np.percentile to the last bit
    out[has] = np.where(frac >= 0.5, b - (b - a) * (1 - frac), a + (b - a) * frac)
    return out
