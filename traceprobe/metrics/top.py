"""The kernels and CPU ops that took the most time (every row; renderers show the top N).

Totals here are plain sums of durations, not unions: ten overlapping launches of
one kernel count ten times, which is what "time spent in this kernel" means.

* Kernels: per (name, device, grid, block) — grid and block as the trace records them
  ("" when it does not) — with the mean registers per thread and est. achieved occupancy
  (None when unrecorded). Order: total descending, then name, device, grid, block.
* CPU ops: per (name, input dims) — the dims "" when shapes were not recorded. ``total`` is
  inclusive (children included); ``self`` subtracts the time of the op's direct children
  (CPU ops of the same thread that it encloses; :mod:`.nesting`). Order: self descending,
  then total, name, dims. ``input_types``: the group's first recorded types.

Every window at once (frames cut by :meth:`Timeline.cut`): rows are grouped by (window,
key) in one pass (:func:`.grouping.key_groups`), sorted by window then by the order above,
and cut into one tuple per window; a window's tuple is what the function gives for that
window's frames alone. A row whose key is missing (NaN) belongs to no group, as in ``groupby``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics import fraction
from traceprobe.metrics.grouping import (
    Windows,
    grouped_sum,
    key_groups,
    of_kind,
    per_window,
    values_at,
    win_of,
)
from traceprobe.metrics.nesting import self_times

TOP = 10  # what renderers show by default
KERNEL_KEY = ("name", "device", "grid", "block")
KERNEL_MEANS = ("registers_per_thread", "occupancy")


@dataclass(frozen=True)
class TopKernel:
    name: str
    device: int
    count: int
    total_ns: int
    mean_ns: float
    fraction: float | None  # total / summed duration of every kernel of the listed devices
    grid: str = ""
    block: str = ""
    registers_per_thread: float | None = None  # mean over the launches that record it
    occupancy: float | None = None  # mean est. achieved occupancy, %


@dataclass(frozen=True)
class TopOp:
    name: str
    count: int
    total_ns: int  # inclusive: a CPU op's children are part of its time
    mean_ns: float
    self_ns: int = 0  # total minus the direct children's time
    input_dims: str = ""  # compact JSON of the inputs' shapes; "" when not recorded
    input_types: str = ""


def top_kernels(
    gpu: pd.DataFrame, devices: Sequence[int], windows: Windows, top: int | None = None
) -> list[tuple[TopKernel, ...]]:
    """Per window of a cut ``gpu`` frame: (kernel name, device, grid, block) groups by
    summed duration; the first ``top`` (all if None).

    Grouped by (window, name, device, grid, block); ``fraction`` is of the summed duration
    of the window's kernels on ``devices``; the means are per group, over its rows that
    record the value (>= 0)."""
    rows = (of_kind(gpu, "kernel")
            & np.isin(gpu["device"].to_numpy(dtype=np.int64), list(devices)))
    win = win_of(gpu)[rows]
    dur = _ints(gpu, "end", rows) - _ints(gpu, "start", rows)
    all_ns = grouped_sum(dur, win, windows.n)
    g = key_groups(win, [values_at(gpu, c, rows) for c in KERNEL_KEY])
    calls, total = g.size(), g.sum(dur)
    order = g.order(-total, *g.codes)
    means = [_group_means(gpu, c, rows, g.gid, g.n)[order].tolist() for c in KERNEL_MEANS]
    totals, counts = total[order].tolist(), calls[order].tolist()
    name, device, grid, block = (v[order].tolist() for v in g.values)
    den = all_ns[g.win[order]].tolist()
    out = [
        TopKernel(name=str(name[i]), device=int(device[i]), count=counts[i],
                  total_ns=totals[i], mean_ns=totals[i] / counts[i],
                  fraction=fraction(totals[i], den[i]), grid=str(grid[i]), block=str(block[i]),
                  registers_per_thread=_or_none(means[0][i]), occupancy=_or_none(means[1][i]))
        for i in range(len(order))
    ]
    return per_window(out, g.win[order], windows, top)


def top_ops(
    cpu: pd.DataFrame, windows: Windows, top: int | None = None
) -> list[tuple[TopOp, ...]]:
    """Per window of a cut ``cpu`` frame: (CPU op name, input dims) groups by self time (all
    processes); the first ``top`` (all if None).

    Self times nest within (window, pid, tid): each window's clipped ops only. Grouped by
    (window, name, input dims); ``input_types`` is each group's first non-missing value
    (``groupby.first``)."""
    rows = of_kind(cpu, "cpu_op")
    win = win_of(cpu)[rows]
    start, end = _ints(cpu, "start", rows), _ints(cpu, "end", rows)
    own = self_times(start, end, [win, _ints(cpu, "pid", rows), _ints(cpu, "tid", rows)])
    g = key_groups(win, [values_at(cpu, "name", rows), values_at(cpu, "input_dims", rows)])
    calls, total, selfs = g.size(), g.sum(end - start), g.sum(own)
    order = g.order(-selfs, -total, *g.codes)
    in_group = g.gid >= 0
    types = np.full(g.n, "", dtype=object)
    if in_group.any():
        types = _column(cpu, "input_types", rows)[in_group].groupby(g.gid[in_group]).first()
        types = types.to_numpy(dtype=object)
    totals, counts, own_ns = total[order].tolist(), calls[order].tolist(), selfs[order].tolist()
    name, dims = (v[order].tolist() for v in g.values)
    typ = types[order].tolist()
    out = [
        TopOp(str(name[i]), counts[i], totals[i], totals[i] / counts[i], own_ns[i],
              str(dims[i]), str(typ[i]))
        for i in range(len(order))
    ]
    return per_window(out, g.win[order], windows, top)


def _ints(df: pd.DataFrame, col: str, rows: np.ndarray) -> np.ndarray:
    return df[col].to_numpy(dtype=np.int64)[rows]


def _column(df: pd.DataFrame, name: str, rows: np.ndarray) -> pd.Series:
    """``df[name]`` at ``rows`` (a fresh index); "" everywhere when ``df`` lacks it."""
    if name not in df.columns:
        return pd.Series("", index=range(int(rows.sum())), dtype=object)
    return df[name][rows].reset_index(drop=True)


def _group_means(df: pd.DataFrame, col: str, rows: np.ndarray, gid: np.ndarray, groups: int
                 ) -> np.ndarray:
    """Per group, the mean of ``col`` over its rows that record it (>= 0); NaN where none
    does (``groupby.mean``, so the same float to the last bit)."""
    out = np.full(groups, np.nan)
    if col not in df.columns:
        return out
    v = _column(df, col, rows)
    ok = (v.astype(float) >= 0).to_numpy(dtype=bool) & (gid >= 0)
    if ok.any():
        m = v[ok].groupby(gid[ok]).mean()
        out[m.index.to_numpy()] = m.to_numpy(dtype=float)
    return out


def _or_none(x: float) -> float | None:
    return None if x != x else x  # NaN: no launch of the group records it
