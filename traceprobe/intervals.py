"""Interval algebra on integer nanoseconds, vectorised with numpy.

Every figure traceprobe reports is the length of some set of time, built from
event intervals by the operations here. Conventions:

* An interval is half-open ``[start, end)`` in int64 nanoseconds.
  Zero-length and negative-length intervals cover no time and are dropped.
* An :class:`Spans` is a *normalised* set: sorted, disjoint, non-touching
  intervals (touching ones are merged). Every function returns normalised sets.
* ``coverage(starts, ends, k)`` counts *raw* intervals (with multiplicity),
  so "time with at least k intervals active" is well defined for overlapping
  kernels on one stream as well as for one interval per stream.

Nothing here loops over events in Python; all operations are sorts, cumulative
sums and ``searchsorted``.

Many groups at once (every window × device × stream of a ``--step all`` report): a
:class:`Grouped` holds the normalised pieces of groups ``0..n-1`` in one pair of arrays
(``starts[off[g]:off[g+1]]`` are group ``g``'s, as :func:`spans` gives them);
:func:`unions` builds it from raw intervals tagged with their group, :func:`depths` gives
each group's ``|coverage(.., 1)|``, ``|coverage(.., 2)|`` and ``max_depth``, and
:func:`overlaps` ``|a ∩ b|`` for many pairs of sets; one sort each, whatever ``n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

_I64 = np.int64


def sorted_unique(a: np.ndarray, mine: bool = False) -> np.ndarray:
    """``np.unique`` of an integer array (as int64) by one sort: numpy 2.4's ``np.unique``
    hashes first, and took 0.32 s for the 600,000 times of one host account, the sort 7 ms.
    ``mine``: ``a`` is the caller's own scratch array (a concatenation made for this call),
    sorted in place instead of copied (one array fewer at the peak)."""
    a = np.asarray(a, np.int64).ravel()
    if mine:
        a.sort()
    else:
        a = np.sort(a)
    if a.size < 2:
        return a
    keep = np.empty(a.size, bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]

class Spans(NamedTuple):
    """A normalised set of half-open intervals: sorted, disjoint, non-touching."""

    starts: np.ndarray
    ends: np.ndarray

    @property
    def length(self) -> int:
        """Total covered time, in ns."""
        return int((self.ends - self.starts).sum())

    def __len__(self) -> int:  # number of disjoint pieces
        return int(self.starts.shape[0])

    @property
    def empty(self) -> bool:
        return self.starts.shape[0] == 0

    @property
    def first(self) -> int | None:
        return int(self.starts[0]) if self.starts.shape[0] else None

    @property
    def last(self) -> int | None:
        return int(self.ends[-1]) if self.ends.shape[0] else None


EMPTY = Spans(np.empty(0, _I64), np.empty(0, _I64))


def _arrays(starts, ends) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(starts, dtype=_I64).ravel()
    e = np.asarray(ends, dtype=_I64).ravel()
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape[0]} vs {e.shape[0]}")
    keep = e > s
    if not keep.all():
        s, e = s[keep], e[keep]
    return s, e


def spans(starts, ends) -> Spans:
    """Union of raw intervals ``[starts[i], ends[i])`` as a normalised set."""
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # A new piece starts where an interval begins strictly after everything before it ended.
    new = np.empty(s.shape[0], dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    out_s = s[idx]
    last = np.append(idx[1:] - 1, s.shape[0] - 1)
    out_e = run_end[last]
    return Spans(out_s, out_e)


def union(*sets: Spans) -> Spans:
    """Union of normalised sets."""
    sets = tuple(x for x in sets if not x.empty)
    if not sets:
        return EMPTY
    if len(sets) == 1:
        return sets[0]
    return spans(np.concatenate([x.starts for x in sets]), np.concatenate([x.ends for x in sets]))


def _boundaries(a: Spans, b: Spans) -> tuple[np.ndarray, np.ndarray]:
    """Sweep both sets; return (points, depth after each point) with depth in {0,1,2}."""
    pts = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    delta = np.concatenate(
        [
            np.ones(len(a), _I64),
            -np.ones(len(a), _I64),
            np.ones(len(b), _I64),
            -np.ones(len(b), _I64),
        ]
    )
    return _sweep(pts, delta)


def _sweep(pts: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Collapse equal points, then return the unique points and the depth right after each."""
    order = np.argsort(pts, kind="stable")
    pts, delta = pts[order], delta[order]
    uniq, first = np.unique(pts, return_index=True)
    summed = np.add.reduceat(delta, first) if pts.shape[0] else delta
    depth = np.cumsum(summed)
    return uniq, depth


def _where_depth(points: np.ndarray, depth: np.ndarray, k: int) -> Spans:
    """Normalised set of time where depth >= k, from a sweep's output."""
    if points.shape[0] == 0:
        return EMPTY
    on = depth >= k
    # Piece i runs from points[i] to points[i+1] when on[i].
    if not on.any():
        return EMPTY
    seg_s = points[:-1][on[:-1]]
    seg_e = points[1:][on[:-1]]
    return spans(seg_s, seg_e)


def intersect(a: Spans, b: Spans) -> Spans:
    """Time in both ``a`` and ``b``."""
    if a.empty or b.empty:
        return EMPTY
    pts, depth = _boundaries(a, b)
    return _where_depth(pts, depth, 2)


def difference(a: Spans, b: Spans) -> Spans:
    """Time in ``a`` but not in ``b``."""
    if a.empty or b.empty:
        return a
    pts = np.concatenate([a.starts, a.ends, b.starts, b.ends])
    # Weight a by +1/-1 and b by -2/+2 (well, "in a and not in b" <=> da==1 and db==0).
    da = np.concatenate([np.ones(len(a), _I64), -np.ones(len(a), _I64), np.zeros(2 * len(b), _I64)])
    db = np.concatenate([np.zeros(2 * len(a), _I64), np.ones(len(b), _I64), -np.ones(len(b), _I64)])
    order = np.argsort(pts, kind="stable")
    pts, da, db = pts[order], da[order], db[order]
    uniq, first = np.unique(pts, return_index=True)
    in_a = np.cumsum(np.add.reduceat(da, first)) > 0
    in_b = np.cumsum(np.add.reduceat(db, first)) > 0
    on = in_a & ~in_b
    if not on[:-1].any():
        return EMPTY
    return spans(uniq[:-1][on[:-1]], uniq[1:][on[:-1]])


def overlap(a: Spans, b: Spans) -> int:
    """``|a ∩ b|`` in ns.

    Sums :func:`measure_within` over ``b``'s pieces (they are disjoint): two
    ``searchsorted`` calls instead of a sort of both sets, about 4x faster.
    """
    if a.empty or b.empty:
        return 0
    return int(measure_within(a, b.starts, b.ends).sum())


def coverage(starts, ends, k: int) -> Spans:
    """Time during which at least ``k`` of the raw intervals are active (k >= 1)."""
    if k < 1:
        raise ValueError("k must be >= 1")
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return EMPTY
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(s.shape[0], _I64), -np.ones(s.shape[0], _I64)])
    points, depth = _sweep(pts, delta)
    return _where_depth(points, depth, k)


def max_depth(starts, ends) -> int:
    """The largest number of raw intervals active at one instant (0 if none)."""
    s, e = _arrays(starts, ends)
    if s.shape[0] == 0:
        return 0
    pts = np.concatenate([s, e])
    delta = np.concatenate([np.ones(s.shape[0], _I64), -np.ones(s.shape[0], _I64)])
    _, depth = _sweep(pts, delta)
    return int(depth.max())


def clip(a: Spans, lo: int, hi: int) -> Spans:
    """``a ∩ [lo, hi)``."""
    if a.empty or hi <= lo:
        return EMPTY
    i = int(np.searchsorted(a.ends, lo, side="right"))
    j = int(np.searchsorted(a.starts, hi, side="left"))
    if j <= i:
        return EMPTY
    s = a.starts[i:j].copy()
    e = a.ends[i:j].copy()
    s[0] = max(s[0], lo)
    e[-1] = min(e[-1], hi)
    return spans(s, e)


def gaps(a: Spans, lo: int, hi: int) -> Spans:
    """The complement of ``a`` within ``[lo, hi)``: idle time."""
    if hi <= lo:
        return EMPTY
    return difference(Spans(np.array([lo], _I64), np.array([hi], _I64)), a)


def whole(lo: int, hi: int) -> Spans:
    """The single interval ``[lo, hi)`` (empty if hi <= lo)."""
    return spans([lo], [hi])


def measure_within(a: Spans, starts, ends) -> np.ndarray:
    """``|a ∩ [starts[i], ends[i])|`` for every i, in ns (int64 array; 0 where end <= start).

    Uses the cumulative length of ``a`` up to each boundary, so it costs two
    ``searchsorted`` calls whatever the number of intervals.
    """
    s = np.asarray(starts, dtype=_I64).ravel()
    e = np.asarray(ends, dtype=_I64).ravel()
    if s.shape != e.shape:
        raise ValueError(f"starts and ends differ in length: {s.shape[0]} vs {e.shape[0]}")
    if a.empty or s.shape[0] == 0:
        return np.zeros(s.shape[0], _I64)
    cum = np.concatenate([[0], np.cumsum(a.ends - a.starts)]).astype(_I64)

    def upto(t: np.ndarray) -> np.ndarray:  # |a ∩ (-inf, t)|
        j = np.searchsorted(a.starts, t, side="right")  # pieces starting at or before t
        over = np.where(j > 0, a.ends[np.maximum(j - 1, 0)] - t, 0)
        return cum[j] - np.maximum(over, 0)

    return np.maximum(upto(e) - upto(s), 0)


def covered_within(sets: Sequence[Spans], starts, ends) -> np.ndarray:
    """``|(∪ sets) ∩ [starts[i], ends[i])|`` for every i (e.g. the busy part of each pixel
    of a row drawn from several sets)."""
    return measure_within(union(*sets), starts, ends)


def merge_close(a: Spans, gap: int) -> Spans:
    """``a`` with pieces whose gap is at most ``gap`` joined (ends stay exact): a coarser
    set for drawing at a resolution of ``gap``."""
    if gap <= 0 or len(a) < 2:
        return a
    joined = spans(a.starts, a.ends + gap)
    return Spans(joined.starts, joined.ends - gap)


# --- many groups at once ---------------------------------------------------------------
# The windowed metrics ask the questions above — a union, its length, the time with two
# intervals at once, the overlap of two sets — for every (window, device, stream) at once.
# The functions below tag intervals with a group id ``0..n-1`` and do one sort over all of
# them, so 10,000 windows cost about what one large window does; their results are the
# integers the one-set functions give (tested for each metric).


def offsets(sorted_keys: np.ndarray, n: int) -> np.ndarray:
    """``o`` with rows ``o[i]:o[i+1]`` of key ``i``, for keys sorted ascending in ``0..n-1``."""
    return np.searchsorted(sorted_keys, np.arange(n + 1), side="left")


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


def overlaps(x: Grouped, a: np.ndarray, y: Grouped, b: np.ndarray) -> np.ndarray:
    """``|x_a[k] ∩ y_b[k]|`` for every k (each group's pieces disjoint, as in a union):
    the time with both sets at once, one sweep for all k."""
    ta, sa, ea = x.take(a)
    tb, sb, eb = y.take(b)
    return depths(np.concatenate([ta, tb]), np.concatenate([sa, sb]), np.concatenate([ea, eb]),
                  len(a)).cover2
