"""The windows of a cut timeline and the per-window cut of result rows.

:class:`Windows` (the analysis windows, and the one window of a frame that was not cut),
:func:`win_of` (each row's window), :class:`Axis` (many windows laid end to end on one time
axis, so that one interval sweep serves them all); :func:`per_window`, :func:`cut` and
:func:`chunks` cut a list of result rows into one tuple per window, and :func:`rows_of`
builds many rows of a frozen dataclass at once. Part of :mod:`traceprobe.metrics.grouping`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, fields
from itertools import repeat
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from traceprobe.intervals import Spans, offsets, spans

T = TypeVar("T")
_I64 = np.int64


# --- the windows -------------------------------------------------------------------------

@dataclass(frozen=True)
class Windows:
    """The analysis windows ``[lo[i], hi[i])`` (int64 ns), in the order of their index."""

    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, bounds: Sequence[tuple[int, int]]) -> Windows:
        return cls(np.asarray([b[0] for b in bounds], _I64).reshape(-1),
                   np.asarray([b[1] for b in bounds], _I64).reshape(-1))

    @classmethod
    def one(cls, lo: int, hi: int) -> Windows:
        """The one window ``[lo, hi)`` (frames that were not cut are its rows)."""
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
        return df["win"].to_numpy(dtype=_I64)
    return np.zeros(len(df), _I64)


@dataclass(frozen=True)
class Axis:
    """Windows ``[lo[i], hi[i]]`` (trace ns) laid at ``base[i]`` of one axis.

    Window ``i`` maps to its own stretch ``[base[i], base[i] + hi[i] - lo[i]]``, one
    nanosecond apart from the next, and each row of window ``i`` is clipped to its window
    before shifting it there. A set built from all the windows' rows is then, stretch by
    stretch, the set each window would give alone: pieces of two windows never overlap nor
    touch, so they never merge, and within a window the order of times is kept. One sort
    of the whole axis thus replaces one sort per window (idle causes, step breakdown)."""

    lo: np.ndarray
    hi: np.ndarray
    base: np.ndarray

    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray) -> Axis:
        lo = np.asarray(lo, _I64).reshape(-1)
        hi = np.maximum(np.asarray(hi, _I64).reshape(-1), lo)
        step = hi - lo + 1  # one ns between stretches: neighbours never touch
        base = np.concatenate([[0], np.cumsum(step)[:-1]]).astype(_I64)
        if lo.shape[0]:  # the axis starts at the first window's start: one window is laid
            base += lo[0]  # where it is (its rows' times need no copy: :meth:`put`)
        return cls(lo, hi, base)

    @property
    def n(self) -> int:
        return int(self.lo.shape[0])

    def put(self, t: np.ndarray, win: np.ndarray) -> np.ndarray:
        """Times ``t`` of rows of windows ``win``, clipped to their window, on the axis
        (in place on one new array: of one window, without per-row bounds)."""
        t = np.asarray(t, _I64)
        if self.lo.shape[0] == 1:
            lo0, hi0, shift = int(self.lo[0]), int(self.hi[0]), int(self.base[0] - self.lo[0])
            if not shift and (not t.size or (int(t.min()) >= lo0 and int(t.max()) <= hi0)):
                view = t.view()  # already on the axis (a window's own rows): read-only
                view.flags.writeable = False
                return view
            out = np.clip(t, lo0, hi0)
            out += shift
            return out
        lo = self.lo[win]
        out = np.clip(t, lo, self.hi[win])
        out -= lo
        del lo
        out += self.base[win]
        return out

    def windows(self, which: np.ndarray | None = None) -> Spans:
        """The windows (all, or those of the boolean mask ``which``) as a set on the axis."""
        b, length = self.base, self.hi - self.lo
        if which is not None:
            b, length = b[which], length[which]
        return spans(b, b + length)

    def win_at(self, x: np.ndarray) -> np.ndarray:
        """The window whose stretch holds axis position ``x`` (at or after its base)."""
        return np.searchsorted(self.base, x, side="right") - 1


# --- the per-window cut of result rows ---------------------------------------------------

def per_window(rows: list[Any], win: np.ndarray, windows: Windows, head: int | None = None
               ) -> list[tuple[Any, ...]]:
    """``rows`` (ordered by window; ``win`` their windows, ascending) as one tuple per window,
    each cut to its first ``head`` rows (as ``DataFrame.head(head)``; all when None)."""
    return cut(rows, offsets(np.asarray(win, dtype=_I64), windows.n), head)


def cut(rows: list[Any], bounds: np.ndarray, head: int | None = None) -> list[tuple[Any, ...]]:
    """``rows`` as one tuple per group: group ``i``'s are ``rows[bounds[i]:bounds[i+1]]``
    (:func:`offsets`), each cut to its first ``head`` (all when None)."""
    o = np.asarray(bounds).tolist()
    if head is None:
        return [tuple(rows[o[i] : o[i + 1]]) for i in range(len(o) - 1)]
    return [tuple(rows[o[i] : o[i + 1]][:head]) for i in range(len(o) - 1)]


def chunks(rows: list[T], k: int, windows: Windows) -> list[tuple[T, ...]]:
    """``rows`` (``k`` per window, window by window) as one tuple of ``k`` per window."""
    return [tuple(rows[w * k : (w + 1) * k]) for w in range(windows.n)]


def rows_of(cls: type[T], **columns: Sequence[Any]) -> list[T]:
    """``[cls(**{k: columns[k][i] for k in columns}) for i]``: one instance per position.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, a
    Python call per field; 10,000 windows make tens of thousands of rows. This builds them
    with C-level loops instead: one dict of the fields per row, set as a bare instance's
    ``__dict__``, the instance ``__init__`` would make (same fields, equality, hash, repr,
    immutability; tested) in about half the time. Only for plain frozen dataclasses (no
    ``__post_init__``, no slots); every field must be given, all columns of one length."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(columns):
        raise TypeError(f"{cls.__name__}: give exactly its fields {names}, not {list(columns)}")
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
        raise TypeError(f"{cls.__name__} needs its own __init__")
    sizes = {len(c) for c in columns.values()}
    if len(sizes) > 1:
        raise ValueError(f"{cls.__name__}: columns differ in length: {sorted(sizes)}")
    keys = list(columns)
    n = sizes.pop() if sizes else 0
    # object.__setattr__ passes by the frozen class's refusal, as dataclasses' own __init__
    fields_ = map(dict, map(zip, repeat(keys), zip(*columns.values(), strict=True)))
    out = list(map(object.__new__, repeat(cls, n)))
    deque(map(object.__setattr__, out, repeat("__dict__"), fields_), maxlen=0)
    return out
