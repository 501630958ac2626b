"""Rows grouped by keys, for every window at once: runs of sorted keys, exact grouped sums
and quantiles, rows grouped by (window, key columns) as ``groupby`` would, and look-ups among
rows keyed by several integer columns. Part of :mod:`traceprobe.metrics.grouping`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.intervals import offsets

Keys = Sequence[np.ndarray]
NONE = np.iinfo(np.int64).min  # "no such row" for int64 results
_I64 = np.int64
_CAP = 1 << 62  # the combined code of a row stays below this (int64)


# --- groups of sorted rows ---------------------------------------------------------------

def key_changes(*sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean mask of rows (sorted by ``sorted_keys``) where some key differs from the row
    before: the first row of each run of equal keys (the first row included)."""
    n = sorted_keys[0].shape[0]
    new = np.zeros(n, bool)
    if n:
        new[0] = True
        for k in sorted_keys:
            new[1:] |= k[1:] != k[:-1]
    return new


def group_ids(sorted_keys: Keys) -> np.ndarray:
    """Dense ids ``0, 1, ...`` of the runs of equal keys of rows sorted by them."""
    return np.cumsum(key_changes(*sorted_keys)) - 1


def grouped_sum(values: np.ndarray, gid: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0..n-1``: the sum of its int64 ``values`` (exact, unlike a float
    bincount, as pandas sums int64); rows of group -1 belong to none."""
    out = np.zeros(n, _I64)
    gid = np.asarray(gid, _I64)
    values = np.asarray(values, _I64)
    ok = gid >= 0
    if not ok.all():
        gid, values = gid[ok], values[ok]
    np.add.at(out, gid, values)
    return out


def grouped_max(values: np.ndarray, gid: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0..n-1`` of ``gid`` (ascending): the largest value (0 for an empty one)."""
    out = np.zeros(n, _I64)
    if len(values):
        starts = np.flatnonzero(key_changes(gid))
        out[gid[starts]] = np.maximum.reduceat(values, starts)
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
    lo = np.floor(pos).astype(_I64)
    hi = np.minimum(lo + 1, size[has] - 1)
    frac = pos - lo
    a, b = v[o[:-1][has] + lo], v[o[:-1][has] + hi]
    # numpy's own lerp, so that the figures match np.percentile to the last bit
    out[has] = np.where(frac >= 0.5, b - (b - a) * (1 - frac), a + (b - a) * frac)
    return out


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


def string_ranks(names: list[str]) -> np.ndarray:
    """For each of ``names``: its rank in Python's string order (equal strings, equal rank),
    so that sorting by rank is sorting by the strings."""
    order = {s: i for i, s in enumerate(sorted(set(names)))}
    return np.array([order[s] for s in names], _I64)


# --- rows grouped by (window, key columns) -----------------------------------------------

@dataclass(frozen=True)
class KeyGroups:
    """Groups of rows sharing (window, key values); group arrays in first-seen order."""

    gid: np.ndarray  # per row: its group, -1 when a key value is missing
    win: np.ndarray  # per group: its window
    codes: tuple[np.ndarray, ...]  # per key column, per group: the value's rank in the column
    values: tuple[np.ndarray, ...]  # per key column, per group: the value (object array)

    @property
    def n(self) -> int:
        return int(self.win.shape[0])

    def size(self) -> np.ndarray:
        """Rows per group (int64)."""
        return np.bincount(self.gid[self.gid >= 0], minlength=self.n).astype(_I64)

    def sum(self, x: np.ndarray) -> np.ndarray:
        """Per group, the exact int64 sum of ``x`` over its rows."""
        return grouped_sum(x, self.gid, self.n)

    def order(self, *keys: np.ndarray) -> np.ndarray:
        """The groups sorted by window, then by ``keys`` (per group arrays, most significant
        first; negate one for descending order); a stable sort."""
        return np.lexsort((*reversed(keys), self.win))


def key_groups(win: np.ndarray, columns: Sequence[Any]) -> KeyGroups:
    """Group rows by (``win``, each of ``columns``) as ``groupby`` would; ``columns`` are
    Series or arrays of the rows, ``win`` the rows' window indices.

    Each key column is factorized once (``sort=True``, so a code is the value's rank and
    codes sort as the values do), the codes are combined with the window into one integer
    per row, and that integer is factorized. A row with a missing key value belongs to no
    group."""
    win = np.asarray(win, dtype=_I64)
    rows = len(win)
    key = win.copy()
    card = int(win.max()) + 1 if rows else 1
    keep = np.ones(rows, bool)
    codes, uniques = [], []
    for col in columns:
        c, uniq = pd.factorize(col, sort=True)
        c = np.asarray(c, dtype=_I64)
        keep &= c >= 0
        m = max(len(uniq), 1)
        if card * m >= _CAP:  # compact the codes so far to keep the product in int64
            key = np.asarray(pd.factorize(key)[0], dtype=_I64)
            card = int(key.max()) + 1 if rows else 1
        key = key * m + c
        card *= m
        codes.append(c)
        uniques.append(np.asarray(uniq, dtype=object))
    gid = np.full(rows, -1, _I64)
    kept = np.flatnonzero(keep)
    g = np.asarray(pd.factorize(key[kept])[0], dtype=_I64)
    gid[kept] = g
    # groups are numbered as first seen: a group's first row is where the running max rises
    rises = np.ones(len(g), bool)
    if len(g) > 1:
        rises[1:] = g[1:] > np.maximum.accumulate(g)[:-1]
    first = kept[rises]
    group_codes = tuple(c[first] for c in codes)
    return KeyGroups(gid=gid, win=win[first], codes=group_codes,
                     values=tuple(u[c] for u, c in zip(uniques, group_codes, strict=True)))


FACTORIZE_CHUNK = 1 << 15


def factorized(values: Any, chunk: int = FACTORIZE_CHUNK) -> tuple[np.ndarray, list[Any]]:
    """``pd.factorize`` of an object array (codes int64 in order of first appearance, -1 for
    a missing value; the distinct values), ``chunk`` rows at a time: its hash table holds a
    chunk, not every row (10 MB for the 200,000 names of a host, with 113 distinct)."""
    values = np.asarray(values, dtype=object)
    if len(values) <= chunk:
        codes, uniques = pd.factorize(pd.Series(values, dtype=object))
        return np.asarray(codes, _I64), list(uniques)
    out = np.empty(len(values), _I64)
    seen: dict[Any, int] = {}
    for at in range(0, len(values), chunk):
        codes, uniques = pd.factorize(pd.Series(values[at : at + chunk], dtype=object))
        known = np.array([seen.setdefault(u, len(seen)) for u in uniques] + [-1], _I64)
        out[at : at + chunk] = known[codes]  # (-1, missing, reads the last: -1)
    return out, list(seen)


def of_kind(df: pd.DataFrame, kind: str) -> np.ndarray:
    """The rows of ``df`` whose ``kind`` is ``kind`` (a numpy comparison, cheaper than a
    Series one)."""
    return np.asarray(df["kind"].to_numpy() == kind, dtype=bool)


def values_at(df: pd.DataFrame, name: str, rows: np.ndarray) -> np.ndarray:
    """``df[name]`` at ``rows`` (a boolean mask) as a numpy array; "" everywhere when ``df``
    lacks the column."""
    if name not in df.columns:
        return np.full(int(rows.sum()), "", dtype=object)
    return df[name].to_numpy()[rows]


# --- look-ups among rows keyed by several integer columns --------------------------------
# Each answers its question for every query with one lexsort of the rows and the queries
# together, instead of one searchsorted per group; keys most significant first.

def _sort(keys: Keys, *minor: np.ndarray) -> np.ndarray:
    """Stable order by ``keys`` (most significant first), then by ``minor`` (in order)."""
    return np.lexsort((*reversed(minor), *reversed(keys)))


def first_of_each(keys: Keys, *minor: np.ndarray) -> np.ndarray:
    """Position of the first row of each distinct key, ordered by key: the row with the
    smallest ``minor`` values (in order), then the earliest in the frame."""
    if not len(keys[0]):
        return np.zeros(0, _I64)
    order = _sort(keys, *minor)
    return order[key_changes(*(k[order] for k in keys))]


def lookup(table: Keys, query: Keys) -> np.ndarray:
    """For each query key: the position of the row of ``table`` (distinct keys) with that
    key, or -1."""
    nt, nq = len(table[0]), len(query[0])
    out = np.full(nq, -1, _I64)
    if not nt or not nq:
        return out
    keys = [np.concatenate([t, q]) for t, q in zip(table, query, strict=True)]
    is_query = np.r_[np.zeros(nt, bool), np.ones(nq, bool)]
    order = _sort(keys, is_query)  # a table row sorts just before the queries of its key
    pos = np.arange(len(order))
    last_row = np.maximum.accumulate(np.where(is_query[order], -1, pos))
    at = np.flatnonzero(is_query[order])
    cand = last_row[at]
    ok = cand >= 0
    for k in keys:
        ok &= k[order[np.maximum(cand, 0)]] == k[order[at]]
    out[order[at] - nt] = np.where(ok, order[np.maximum(cand, 0)], -1)
    return out


def rank(rows: Keys, values: np.ndarray, query: Keys, at: np.ndarray,
         inclusive: bool | np.ndarray = False) -> tuple[np.ndarray, np.ndarray]:
    """``(order, before)``: ``order`` sorts the rows by (key, value), stably; ``before[j]`` is
    how many rows sort before query ``j`` in it: rows of a smaller key, and rows of its key
    whose value is below ``at[j]`` (or equal to it where ``inclusive``). So the rows of
    query j's key with a value below ``at[j]`` are ``order[g:before[j]]`` for the key's first
    position ``g``, and ``searchsorted`` within the key is ``before[j] - g``."""
    nr, nq = len(values), len(at)
    keys = [np.concatenate([r, q]) for r, q in zip(rows, query, strict=True)]
    v = np.concatenate([np.asarray(values, _I64), np.asarray(at, _I64)])
    # on equal values: strict queries first (0), then the rows (1), then inclusive queries (2)
    inc = np.full(nq, inclusive) if isinstance(inclusive, bool) else inclusive
    tie = np.r_[np.ones(nr, np.int8), np.where(inc, 2, 0).astype(np.int8)]
    order = _sort(keys, v, tie)
    is_row = order < nr
    count = np.cumsum(is_row)
    before = np.zeros(nq, _I64)
    q_at = np.flatnonzero(~is_row)
    before[order[q_at] - nr] = count[q_at]
    return order[is_row], before


def latest_end_before(rows: Keys, start: np.ndarray, end: np.ndarray, query: Keys,
                      at: np.ndarray) -> np.ndarray:
    """For each query: the latest ``end`` among the rows of its key that start strictly before
    ``at`` (:data:`NONE` where none does)."""
    out = np.full(len(at), NONE, _I64)
    if not len(start) or not len(at):
        return out
    order, before = rank(rows, start, query, at)
    keys = [k[order] for k in rows]
    running = pd.Series(end[order]).groupby(group_ids(keys)).cummax().to_numpy(_I64)
    prev = np.maximum(before - 1, 0)
    ok = before > 0
    for k, q in zip(keys, query, strict=True):
        ok &= k[prev] == q
    out[ok] = running[prev[ok]]
    return out


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


