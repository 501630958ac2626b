"""Step-time breakdown: each ProfilerStep, per device, cut into what filled it.

As TensorBoard's profiler plugin did (its "Step Time Breakdown", since removed from
kineto), every instant of a step's window ``[start, end)`` goes to the first category
below that is active then; the parts therefore sum exactly to the step:

1. ``kernel`` — a compute kernel (not a communication kernel) on the device;
2. ``memcpy`` — a memory copy on the device;
3. ``memset`` — a memset on the device;
4. ``communication`` — a communication kernel (NCCL/RCCL) on the device;
5. ``runtime`` — a CUDA runtime/driver call of the trace's process (launches, syncs);
6. ``dataloader`` — a DataLoader range of the process (see :mod:`.regions`);
7. ``cpu_exec`` — any other CPU op or ``record_function`` range of the process;
8. ``other`` — nothing of the above.

A trace without GPU activity gets one row per step with ``device`` None (GPU parts 0).

``phases`` splits the same window into forward / backward / optimizer / dataloader / other
from the trace's own markers (:mod:`.phases`: autograd engine events, ``Optimizer.*`` and
DataLoader ranges); host time, the same for every device's row; it sums to the step.

``regions`` splits the same window by the innermost region (a ``record_function``
range, a DataLoader range or an ``Optimizer.*`` range) covering each instant, and
``(no region)`` for the rest; it also sums to the step.

:func:`step_breakdown` computes the breakdown of many analysis windows at once
(``--step all``): every window's steps lie on one :class:`~.grouping.Axis`, so each layer is one
union over all windows and each step's share of it one ``measure_within``; the regions
are summed per (step, name) in one sort.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY, measure_within, offsets, spans, union
from traceprobe.metrics.grouping import (
    Axis,
    Windows,
    key_changes,
    sorted_unique,
    string_ranks,
    win_of,
)
from traceprobe.metrics.phases import PHASES, phase_ns
from traceprobe.metrics.regions import REGION_CLASSES, HostEvents, innermost

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader",
              "cpu_exec", "other")
NO_REGION = "(no region)"
TOP_REGIONS = 8


@dataclass(frozen=True)
class Part:
    name: str
    ns: int
    share: float | None  # of the step


@dataclass(frozen=True)
class StepBreakdown:
    step: int
    device: int | None
    start_ns: int
    end_ns: int
    parts: tuple[Part, ...]  # CATEGORIES, in order
    regions: tuple[Part, ...]  # largest first; the rest summed into "(other regions)"
    phases: tuple[Part, ...] = ()  # PHASES, in order (metrics/phases.py)


def step_breakdown(
    gpu: pd.DataFrame, ev: HostEvents, steps: pd.DataFrame, devices: Sequence[int],
    windows: Windows,
) -> list[tuple[StepBreakdown, ...]]:
    """One row per (step, device) of ``steps`` (see the module docstring), for every window
    at once: item ``i`` is the rows of ``gpu``, ``ev`` and ``steps`` whose ``win`` is ``i``
    (cut frames; a frame without ``win`` is window 0). Per window the steps are taken by
    start (ties: frame order), the first row of each step number kept; devices in the order
    of ``devices``."""
    n = windows.n
    if steps.empty:
        return [()] * n
    sw, num, ss, se = _steps(steps)
    lo = np.zeros(n, np.int64)
    hi = np.zeros(n, np.int64)
    first = key_changes(sw)
    lo[sw[first]] = ss[first]  # the steps are by start: a window's first starts first
    hi[sw[first]] = se[first]
    np.maximum.at(hi, sw, se)
    axis = Axis.of(lo, hi)
    s_ax, e_ax = axis.put(ss, sw), axis.put(se, sw)
    ev_win = ev.win if ev.win is not None else np.zeros(len(ev.start), np.int64)
    ev_s, ev_e = axis.put(ev.start, ev_win), axis.put(ev.end, ev_win)
    host = [spans(ev_s[m], ev_e[m]) for m in (np.isin(ev.cls, ("runtime", "sync")),
                                              ev.cls == "dataloader",
                                              np.isin(ev.cls, ("cpu_op", "optimizer", "region")))]
    regions = _regions(ev, ev_s, ev_e, s_ax, e_ax)
    phase_rows = phase_ns(ev, ev_s, ev_e, s_ax, e_ax).tolist()
    g_win = win_of(gpu)
    g_dev = gpu["device"].to_numpy()
    g_kind = gpu["kind"].to_numpy(dtype=object)
    g_comm = gpu["comm"].to_numpy().astype(bool)
    g_s, g_e = axis.put(gpu["start"].to_numpy(np.int64), g_win), axis.put(
        gpu["end"].to_numpy(np.int64), g_win)
    is_kernel = g_kind == "kernel"
    kinds = (is_kernel & ~g_comm, g_kind == "memcpy", g_kind == "memset", is_kernel & g_comm)
    length = (se - ss).tolist()
    bounds = offsets(sw, n).tolist()
    steps_l, ss_l, se_l = num.tolist(), ss.tolist(), se.tolist()
    part = _parts()
    targets: list[int | None] = [*devices] or [None]
    rows: list[list[StepBreakdown]] = [[] for _ in range(n)]
    for dev in targets:
        mine = g_dev == dev if dev is not None else np.zeros(len(g_dev), bool)
        layers = [spans(g_s[mine & k], g_e[mine & k]) for k in kinds] + host
        covered, before = EMPTY, np.zeros(len(ss), np.int64)
        measured = []
        for layer in layers:  # what each layer adds to those before it, per step
            covered = union(covered, layer)
            now = measure_within(covered, s_ax, e_ax)
            measured.append(now - before)
            before = now
        per_step = np.stack(measured, axis=1).tolist() if len(ss) else []
        for w in np.flatnonzero(np.diff(bounds)).tolist():
            for i in range(bounds[w], bounds[w + 1]):
                total = length[i]
                ns = per_step[i]
                ns.append(total - sum(ns))
                parts = tuple([part(c, v, total) for c, v in zip(CATEGORIES, ns, strict=True)])
                phases = tuple([part(c, v, total)
                                for c, v in zip(PHASES, phase_rows[i], strict=True)])
                rows[w].append(StepBreakdown(steps_l[i], dev, ss_l[i], se_l[i], parts,
                                             regions[i], phases))
    return [tuple(r) if r else () for r in rows]


def _steps(steps: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The steps of each window (window, step number, start, end), by window, then by start
    (ties: frame order), each step number once (its first row)."""
    sw = win_of(steps)
    num = steps["step"].to_numpy(dtype=np.int64)
    ss = steps["start"].to_numpy(dtype=np.int64)
    se = steps["end"].to_numpy(dtype=np.int64)
    order = np.lexsort((ss, sw))
    by_step = np.lexsort((np.arange(len(order)), num[order], sw[order]))
    firsts = by_step[key_changes(sw[order][by_step], num[order][by_step])]
    keep = order[np.sort(firsts)]
    return sw[keep], num[keep], ss[keep], se[keep]


def _regions(
    ev: HostEvents, ev_s: np.ndarray, ev_e: np.ndarray, s: np.ndarray,
    e: np.ndarray,
) -> list[tuple[Part, ...]]:
    """Per step (``s``/``e`` on the axis): its window split by the innermost region (see the
    module docstring), all windows in one sweep and one sort by (step, name)."""
    idx = np.flatnonzero(np.isin(ev.cls, REGION_CLASSES))
    win = ev.win[idx] if ev.win is not None else np.zeros(idx.size, np.int64)
    rank = np.empty(idx.size, np.int64)  # the innermost rule's order, by the events' own times
    rank[np.lexsort((-ev.end[idx], ev.start[idx], win))] = np.arange(idx.size)
    bounds = sorted_unique(np.concatenate([s, e, ev_s[idx], ev_e[idx]]), mine=True)
    owner = innermost(bounds, ev_s[idx], ev_e[idx], rank)
    seg_s, length = bounds[:-1], np.diff(bounds)
    # a segment belongs to the last step starting at or before it, if inside that step
    which = np.searchsorted(s, seg_s, side="right") - 1
    inside = (which >= 0) & (seg_s < e[np.maximum(which, 0)]) & (length > 0)
    codes, uniques = pd.factorize(pd.Series(ev.name[idx], dtype=object))
    names = [str(u) for u in uniques] + [NO_REGION]
    label = np.where(owner >= 0, codes[np.maximum(owner, 0)] if idx.size else owner,
                     len(names) - 1)
    step, name, ns = which[inside], label[inside], length[inside]
    order = np.lexsort((name, step))
    step, name, ns = step[order], name[order], ns[order]
    first = np.flatnonzero(key_changes(step, name))
    sums = np.add.reduceat(ns, first) if first.size else ns
    step, name = step[first], name[first]
    order = np.lexsort((string_ranks(names)[name], -sums, step))
    per: list[list[tuple[str, int]]] = [[] for _ in range(len(s))]
    for i, k, v in zip(step[order].tolist(), name[order].tolist(), sums[order].tolist(),
                       strict=True):
        per[i].append((names[k], v))
    out = []
    part = _parts()
    for i, total in enumerate((e - s).tolist()):
        rows = per[i]
        if not rows and total:
            rows = [(NO_REGION, total)]
        if len(rows) > TOP_REGIONS:
            rest = sum(v for _, v in rows[TOP_REGIONS - 1 :])
            rows = rows[: TOP_REGIONS - 1] + [("(other regions)", rest)]
        out.append(tuple([part(k, v, total) for k, v in rows]))
    return out


def _parts() -> Callable[[str, int, int], Part]:
    """``Part(name, ns, share of total)``, each distinct one made once (parts are frozen, and
    many steps share some: every zero part of a step of equal length)."""
    made: dict[tuple[str, int, int], Part] = {}

    def part(name: str, ns: int, total: int) -> Part:
        p = made.get((name, ns, total))
        if p is None:
            p = made[(name, ns, total)] = Part(name, ns, _share(ns, total))
        return p

    return part


def _share(ns: int, total: int) -> float | None:
    return ns / total if total else None
