"""Many windows laid end to end on one time axis, so that one interval sweep serves them all.

The idle attribution (:mod:`.idle`) and the step-time breakdown (:mod:`.steps`) work on
sets of time (unions, differences, the innermost event at each instant). For many windows
at once they map every window ``[lo[i], hi[i]]`` to its own stretch of one axis,
``[base[i], base[i] + hi[i] - lo[i]]``, one nanosecond apart from the next, and clip each
row of window ``i`` to its window before shifting it there. Then a set built from all the
windows' rows is, stretch by stretch, the set each window would give alone: pieces of two
windows never overlap nor touch, so they never merge, and within a window the order of
times is kept. One sort of the whole axis thus replaces one sort per window; what lies in
window ``i`` is read back with :meth:`Axis.win_at`.

(A helper of the wave's own; :mod:`.windows` is the shared module.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceprobe.intervals import Spans, spans


@dataclass(frozen=True)
class Axis:
    """Windows ``[lo[i], hi[i]]`` (trace ns) laid at ``base[i]`` of one axis."""

    lo: np.ndarray
    hi: np.ndarray
    base: np.ndarray

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray) -> Axis:
        lo = np.asarray(lo, np.int64).reshape(-1)
        hi = np.maximum(np.asarray(hi, np.int64).reshape(-1), lo)
        step = hi - lo + 1  # one ns between stretches: neighbours never touch
        base = np.concatenate([[0], np.cumsum(step)[:-1]]).astype(np.int64)
        return cls(lo, hi, base)

    @property
    def n(self) -> int:
        return int(self.lo.shape[0])

    def put(self, t: np.ndarray, win: np.ndarray) -> np.ndarray:
        """Times ``t`` of rows of windows ``win``, clipped to their window, on the axis."""
        lo = self.lo[win]
        return self.base[win] + (np.clip(np.asarray(t, np.int64), lo, self.hi[win]) - lo)

    def windows(self, which: np.ndarray | None = None) -> Spans:
        """The windows (all, or those of the boolean mask ``which``) as a set on the axis."""
        b, length = self.base, self.hi - self.lo
        if which is not None:
            b, length = b[which], length[which]
        return spans(b, b + length)

    def win_at(self, x: np.ndarray) -> np.ndarray:
        """The window whose stretch holds axis position ``x`` (at or after its base)."""
        return np.searchsorted(self.base, x, side="right") - 1


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int64 array by one sort (numpy's hashing unique is slower here)."""
    a = np.sort(np.asarray(a, np.int64), kind="stable")
    keep = np.ones(a.shape[0], bool)
    keep[1:] = a[1:] != a[:-1]
    return a[keep]


def string_ranks(names: list[str]) -> np.ndarray:
    """For each of ``names``: its rank in Python's string order (equal strings, equal rank),
    so that sorting by rank is sorting by the strings."""
    order = {s: i for i, s in enumerate(sorted(set(names)))}
    return np.array([order[s] for s in names], np.int64)


def first_of_runs(*keys: np.ndarray) -> np.ndarray:
    """Boolean mask of rows (sorted by ``keys``) where some key differs from the row before."""
    n = keys[0].shape[0]
    new = np.zeros(n, bool)
    if n:
        new[0] = True
        for k in keys:
            new[1:] |= k[1:] != k[:-1]
    return new
