"""Metrics: pure functions from a timeline's frames to plain figures.

Every function here takes frames (or figures computed from them) and returns
frozen dataclasses whose times are **integer nanoseconds** (``*_ns`` fields);
:mod:`traceprobe.report` assembles them and converts to microseconds only in
``Report.to_dict``. Nothing here prints, reads files or loops over events in
Python: interval maths goes through :mod:`traceprobe.intervals`, grouping
through numpy/pandas. Loops over devices, streams and pairs of them are fine.

Modules, one concept each:

* :mod:`.devices` — per-device and per-stream busy time, stream concurrency.
* :mod:`.overlap` — device vs device, copy vs compute, comm vs compute, serial-equivalent.
* :mod:`.host`    — launch latency, kernel gaps (and the idle-cause row types).
* :mod:`.idle`    — each device's idle time partitioned into host causes.
* :mod:`.regions` — the host events classified; the innermost one at each instant.
* :mod:`.steps`   — each ProfilerStep cut into what filled it.
* :mod:`.copies`  — copy bandwidth against the link's rate.
* :mod:`.top`     — top kernels and CPU ops by total time; :mod:`.nesting` their self time.
* :mod:`.runs`    — which traces are ranks of one job.

Every figure is computed for many windows at once (``--step all``: every ProfilerStep), with
one signature: ``f(inputs..., windows: Windows, options...)`` takes frames cut by
:meth:`traceprobe.timeline.Timeline.cut` (or the per-window results of another figure) and
gives a list, one result per window; the one-window case is ``f(..., Windows.one(lo,
hi))[0]``. The grouping underneath (the windows, rows grouped by window and key, exact
grouped sums, look-ups, the per-window cut) is :mod:`.grouping`; the interval algebra of
many groups at once is in :mod:`traceprobe.intervals`.

The definitions of every figure are in ``docs/FIGURES.md``.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY

INTERNAL = {"internal": True}


def internal(default: Any = EMPTY) -> Any:
    """A dataclass field kept for computation (e.g. a busy set) but not reported."""
    return field(default=default, repr=False, compare=False, metadata=INTERNAL)


def fraction(num: float, den: float) -> float | None:
    """``num / den``, or None when ``den`` is zero (a fraction of no time is undefined)."""
    return None if den == 0 else num / den


def groups(df: pd.DataFrame, by: str | list[str]) -> dict[Any, np.ndarray]:
    """Row positions of ``df`` for each value of ``by``, keys as plain ints (or tuples)."""
    if df.empty:
        return {}
    raw = df.groupby(by, sort=True).indices
    out: dict[Any, np.ndarray] = {}
    for key, idx in raw.items():
        if isinstance(key, tuple):
            out[tuple(int(k) for k in key)] = idx
        else:
            out[int(key)] = idx
    return out


__all__ = ["fraction", "groups", "internal", "INTERNAL"]
