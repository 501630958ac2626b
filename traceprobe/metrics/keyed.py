"""Rows grouped by (window, key columns) for every window at once, as ``groupby`` would.

The per-window tables (top kernels, top ops, copy rates) group a frame's rows by a few key
columns within each window. :func:`key_groups` does it for all windows in one pass: each
key column is factorized once (``pd.factorize(sort=True)``, so a code is the value's rank
and codes sort as the values do), the codes are combined with the window into one integer
per row, and that integer is factorized. As in ``groupby``, a row with a missing key value
belongs to no group. Sums are exact int64 sums (``np.add.at``), as pandas sums int64.

:func:`per_window` then cuts a list of result rows, ordered by window, into one tuple per
window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.metrics.windows import Windows, offsets

_CAP = 1 << 62  # the combined code of a row stays below this (int64)


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
        return np.bincount(self.gid[self.gid >= 0], minlength=self.n).astype(np.int64)

    def sum(self, x: np.ndarray) -> np.ndarray:
        """Per group, the exact int64 sum of ``x`` over its rows."""
        out = np.zeros(self.n, np.int64)
        ok = self.gid >= 0
        np.add.at(out, self.gid[ok], np.asarray(x, dtype=np.int64)[ok])
        return out

    def order(self, *keys: np.ndarray) -> np.ndarray:
        """The groups sorted by window, then by ``keys`` (per group arrays, most significant
        first; negate one for descending order); a stable sort."""
        return np.lexsort((*reversed(keys), self.win))


def key_groups(win: np.ndarray, columns: Sequence[Any]) -> KeyGroups:
    """Group rows by (``win``, each of ``columns``); ``columns`` are Series or arrays of the
    rows, ``win`` the rows' window indices."""
    win = np.asarray(win, dtype=np.int64)
    rows = len(win)
    key = win.copy()
    card = int(win.max()) + 1 if rows else 1
    keep = np.ones(rows, bool)
    codes, uniques = [], []
    for col in columns:
        c, uniq = pd.factorize(col, sort=True)
        c = np.asarray(c, dtype=np.int64)
        keep &= c >= 0
        m = max(len(uniq), 1)
        if card * m >= _CAP:  # compact the codes so far to keep the product in int64
            key = np.asarray(pd.factorize(key)[0], dtype=np.int64)
            card = int(key.max()) + 1 if rows else 1
        key = key * m + c
        card *= m
        codes.append(c)
        uniques.append(np.asarray(uniq, dtype=object))
    gid = np.full(rows, -1, np.int64)
    kept = np.flatnonzero(keep)
    g = np.asarray(pd.factorize(key[kept])[0], dtype=np.int64)
    gid[kept] = g
    # groups are numbered as first seen: a group's first row is where the running max rises
    rises = np.ones(len(g), bool)
    if len(g) > 1:
        rises[1:] = g[1:] > np.maximum.accumulate(g)[:-1]
    first = kept[rises]
    group_codes = tuple(c[first] for c in codes)
    return KeyGroups(gid=gid, win=win[first], codes=group_codes,
                     values=tuple(u[c] for u, c in zip(uniques, group_codes, strict=True)))


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


def count_of(nwin: int | Windows) -> int:
    """The number of windows, from a count or a :class:`Windows`."""
    return nwin.n if isinstance(nwin, Windows) else int(nwin)


def per_window(rows: list[Any], win: np.ndarray, nwin: int, n: int | None = None
               ) -> list[tuple[Any, ...]]:
    """``rows`` (ordered by window; ``win`` their windows, ascending) as one tuple per window,
    each cut to its first ``n`` rows (as ``DataFrame.head(n)``; all when None)."""
    o = offsets(np.asarray(win, dtype=np.int64), nwin).tolist()
    if n is None:
        return [tuple(rows[o[i] : o[i + 1]]) for i in range(nwin)]
    return [tuple(rows[o[i] : o[i + 1]][:n]) for i in range(nwin)]
