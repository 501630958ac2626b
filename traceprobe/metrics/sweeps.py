"""Interval algebra for many groups at once (windows × devices × streams), one sort each.

The windowed metrics (``*_by_window`` in :mod:`.devices` and :mod:`.overlap`) ask the
same questions as :mod:`traceprobe.intervals` — a union, its length, the time with two
intervals at once, the overlap of two sets — but for every (window, device, stream) at
once. Each function here tags intervals with a group id ``0..n-1`` and does one sort
over all of them, so 10,000 windows cost about what one large window does.

* :class:`Grouped` — the normalised pieces of every group, in one pair of arrays
  (``starts[off[g]:off[g+1]]`` are group ``g``'s pieces, as :func:`~traceprobe.intervals.spans`
  gives them).
* :func:`depths` — per group, ``|coverage(.., 1)|``, ``|coverage(.., 2)|`` and ``max_depth``.
* :func:`pairs_within` and :func:`overlaps` — every pair ``i < j`` of the members of each
  group, and ``|a ∩ b|`` for many pairs of sets at once.
* :func:`positions`, :func:`report_rows`, :func:`sums` — numbering the (window, device)
  groups, listing them in a report's order, exact per-group sums.

Results are the integers :mod:`traceprobe.intervals` gives (tested for each metric).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from traceprobe.intervals import Spans
from traceprobe.metrics.windows import offsets

_I64 = np.int64


def positions(values: np.ndarray, keys: Iterable[int]) -> tuple[np.ndarray, list[int]]:
    """Each of ``values``' position among the distinct ``keys`` (sorted), -1 where it is none
    of them; and those distinct keys (e.g. the devices asked for, then ``window * len + pos``
    numbers the (window, device) groups)."""
    uniq = sorted(set(int(k) for k in keys))
    table = np.asarray(uniq, _I64)
    pos = np.searchsorted(table, values)
    hit = pos < len(uniq)
    hit[hit] = table[pos[hit]] == values[hit]
    return np.where(hit, pos, -1), uniq


def report_rows(n: int, keys: list[int], wanted: Sequence[int]) -> np.ndarray:
    """The group ``w * len(keys) + keys.index(k)`` of each report row: window by window, one
    row per ``wanted`` key in its order (``keys`` as :func:`positions` returns them)."""
    at = np.asarray([keys.index(int(k)) for k in wanted], _I64)
    return (np.arange(n, dtype=_I64)[:, None] * len(keys) + at).ravel()


def ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``concatenate([arange(lo[i], hi[i]) for i])`` without the loop."""
    size = hi - lo
    total = int(size.sum())
    if not total:
        return np.empty(0, _I64)
    starts = np.cumsum(size) - size  # where each range begins in the output
    return np.repeat(lo - starts, size) + np.arange(total, dtype=_I64)


class Grouped(NamedTuple):
    """The normalised pieces of groups ``0..n-1``: group ``g``'s are ``[off[g], off[g+1])``."""

    off: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def n(self) -> int:
        return int(self.off.shape[0]) - 1

    def lengths(self) -> np.ndarray:
        """``|pieces of g|`` for every group (int64 ns)."""
        cum = np.concatenate([[0], np.cumsum(self.ends - self.starts)]).astype(_I64)
        return cum[self.off[1:]] - cum[self.off[:-1]]

    def spans(self, groups: np.ndarray | None = None) -> list[Spans]:
        """Each group's pieces (or those of ``groups``) as a :class:`Spans` (views into the
        shared arrays)."""
        s, e = self.starts, self.ends
        if groups is None:
            lo, hi = self.off[:-1].tolist(), self.off[1:].tolist()
        else:
            at = np.asarray(groups, _I64)
            lo, hi = self.off[at].tolist(), self.off[at + 1].tolist()
        return [Spans(s[i:j], e[i:j]) for i, j in zip(lo, hi, strict=True)]

    def take(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pieces of ``groups[k]`` for every k, tagged with k: ``(k, starts, ends)``."""
        lo, hi = self.off[groups], self.off[groups + 1]
        idx = ranges(lo, hi)
        tag = np.repeat(np.arange(len(groups), dtype=_I64), hi - lo)
        return tag, self.starts[idx], self.ends[idx]

    @classmethod
    def of(cls, sets: list[Spans]) -> Grouped:
        """Many sets already normalised (e.g. the busy sets of a report's rows)."""
        sizes = np.fromiter((len(x.starts) for x in sets), _I64, len(sets))
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(_I64)
        if not sets:
            return cls(off, np.empty(0, _I64), np.empty(0, _I64))
        return cls(off, np.concatenate([x.starts for x in sets]).astype(_I64, copy=False),
                   np.concatenate([x.ends for x in sets]).astype(_I64, copy=False))


def unions(gid: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> Grouped:
    """:func:`traceprobe.intervals.spans` of each group's raw intervals, all at once.

    One sort by (group, start); a running maximum of the ends within each group; a new
    piece wherever an interval starts strictly after everything before it in its group
    ended (so touching intervals merge, zero-length ones are dropped, as ``spans`` does)."""
    keep = e > s
    gid, s, e = gid[keep], s[keep], e[keep]
    if not len(s):
        return Grouped(np.zeros(n + 1, _I64), np.empty(0, _I64), np.empty(0, _I64))
    order = np.lexsort((s, gid))
    gid, s, e = gid[order], s[order], e[order]
    if gid[0] == gid[-1]:
        run_end = np.maximum.accumulate(e)
    else:
        run_end = pd.Series(e).groupby(gid, sort=False).cummax().to_numpy(_I64)
    new = np.ones(len(s), bool)
    new[1:] = (gid[1:] != gid[:-1]) | (s[1:] > run_end[:-1])
    idx = np.flatnonzero(new)
    out_e = run_end[np.append(idx[1:] - 1, len(s) - 1)]
    return Grouped(offsets(gid[idx], n), s[idx], out_e)


class Depths(NamedTuple):
    """Per group: time with >= 1 and >= 2 intervals active, and the most active at once."""

    cover1: np.ndarray
    cover2: np.ndarray
    max_depth: np.ndarray


def depths(gid: np.ndarray, s: np.ndarray, e: np.ndarray, n: int) -> Depths:
    """``coverage(.., 1).length``, ``coverage(.., 2).length`` and ``max_depth`` of each
    group's raw intervals (with multiplicity), by one sweep over (group, time)-sorted ±1
    marks. Ends sort before starts at one instant (half-open intervals), so the running
    depth after the last mark of an instant is the depth :func:`traceprobe.intervals.coverage`
    sees there and never exceeds it within the instant; each group nets to 0, so the
    running sum is the depth within the group."""
    keep = e > s
    gid, s, e = gid[keep], s[keep], e[keep]
    zeros = np.zeros(n, _I64)
    if not len(s):
        return Depths(zeros, zeros.copy(), zeros.copy())
    m = len(s)
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(m, _I64), np.full(m, -1, _I64)])
    g = np.concatenate([gid, gid])
    order = np.lexsort((delta, pts, g))
    pts, delta, g = pts[order], delta[order], g[order]
    depth = np.cumsum(delta)
    step = np.zeros(len(pts), _I64)
    step[:-1] = pts[1:] - pts[:-1]
    step[:-1][g[1:] != g[:-1]] = 0
    off = offsets(g, n)
    has = off[1:] > off[:-1]

    def per_group(x: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0], np.cumsum(x)])
        return cum[off[1:]] - cum[off[:-1]]

    top = zeros.copy()
    top[has] = np.maximum.reduceat(depth, off[:-1][has])
    return Depths(per_group(np.where(depth >= 1, step, 0)),
                  per_group(np.where(depth >= 2, step, 0)), top)


def pairs_within(off: np.ndarray, upto: int | None = None) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Every pair ``i < j`` of the members of each group whose members are the contiguous
    ``off[g]:off[g+1]`` (groups with more than ``upto`` members are skipped).

    Returns ``(a, b, pair_off)``: pairs ``pair_off[g]:pair_off[g+1]`` are group g's, in the
    order ``for i: for j > i``, as member indices ``a < b``."""
    size = np.diff(off)
    n = len(size)
    a_parts, b_parts, g_parts = [], [], []
    for k in np.unique(size).tolist():
        if k < 2 or (upto is not None and k > upto):
            continue
        ti, tj = np.triu_indices(k, 1)
        gs = np.flatnonzero(size == k)
        base = off[gs][:, None]
        a_parts.append((base + ti).ravel())
        b_parts.append((base + tj).ravel())
        g_parts.append(np.repeat(gs, len(ti)))
    if not a_parts:
        empty = np.empty(0, _I64)
        return empty, empty, np.zeros(n + 1, _I64)
    a, b, g = (np.concatenate(x).astype(_I64) for x in (a_parts, b_parts, g_parts))
    order = np.argsort(g, kind="stable")  # groups of one size are already in pair order
    a, b, g = a[order], b[order], g[order]
    return a, b, offsets(g, n)


def overlaps(x: Grouped, a: np.ndarray, y: Grouped, b: np.ndarray) -> np.ndarray:
    """``|x_a[k] ∩ y_b[k]|`` for every k (each group's pieces disjoint, as in a union):
    the time with both sets at once, one sweep for all k."""
    ta, sa, ea = x.take(a)
    tb, sb, eb = y.take(b)
    return depths(np.concatenate([ta, tb]), np.concatenate([sa, sb]), np.concatenate([ea, eb]),
                  len(a)).cover2
