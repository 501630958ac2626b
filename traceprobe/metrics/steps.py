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

``regions`` splits the same window by the innermost region (a ``record_function``
range, a DataLoader range or an ``Optimizer.*`` range) covering each instant, and
``(no region)`` for the rest; it also sums to the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import EMPTY, Spans, difference, measure_within, spans, union
from traceprobe.metrics.regions import REGION_CLASSES, HostEvents, innermost, segments

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


def step_breakdown(
    gpu: pd.DataFrame, ev: HostEvents, steps: pd.DataFrame, devices: Sequence[int]
) -> tuple[StepBreakdown, ...]:
    """One row per (step, device) of ``steps`` (see the module docstring)."""
    if steps.empty:
        return ()
    st = steps.sort_values("start", kind="stable").drop_duplicates("step")
    n = st["step"].to_numpy(dtype=np.int64)
    s = st["start"].to_numpy(dtype=np.int64)
    e = st["end"].to_numpy(dtype=np.int64)
    host = _host_layers(ev)
    regions = _regions(ev, s, e)
    out = []
    targets: list[int | None] = [*devices] or [None]
    for dev in targets:
        layers = (_device_layers(gpu, dev) if dev is not None else [EMPTY] * 4) + host
        covered = EMPTY
        measured = []
        for layer in layers:
            only = difference(layer, covered)
            covered = union(covered, layer)
            measured.append(measure_within(only, s, e))
        for i in range(len(s)):
            length = int(e[i] - s[i])
            ns = [int(m[i]) for m in measured]
            ns.append(length - sum(ns))
            parts = tuple(
                Part(c, v, _share(v, length)) for c, v in zip(CATEGORIES, ns, strict=True))
            out.append(StepBreakdown(int(n[i]), dev, int(s[i]), int(e[i]), parts, regions[i]))
    return tuple(out)


def _device_layers(gpu: pd.DataFrame, dev: int) -> list[Spans]:
    g = gpu[gpu["device"] == dev]
    kind, comm = g["kind"], g["comm"].astype(bool)

    def sp(mask: pd.Series) -> Spans:
        return spans(g["start"].to_numpy(dtype=np.int64)[mask.to_numpy()],
                     g["end"].to_numpy(dtype=np.int64)[mask.to_numpy()])

    return [sp((kind == "kernel") & ~comm), sp(kind == "memcpy"), sp(kind == "memset"),
            sp((kind == "kernel") & comm)]


def _host_layers(ev: HostEvents) -> list[Spans]:
    def sp(mask: np.ndarray) -> Spans:
        return spans(ev.start[mask], ev.end[mask])

    return [sp(np.isin(ev.cls, ("runtime", "sync"))), sp(ev.cls == "dataloader"),
            sp(np.isin(ev.cls, ("cpu_op", "optimizer", "region")))]


def _regions(ev: HostEvents, s: np.ndarray, e: np.ndarray) -> list[tuple[Part, ...]]:
    """Per step: its window split by the innermost region (see the module docstring)."""
    idx = np.flatnonzero(np.isin(ev.cls, REGION_CLASSES))
    rs, re_, names = ev.start[idx], ev.end[idx], ev.name[idx]
    if len(s) == 0:
        return []
    bounds = segments(s, e, rs, re_, lo=int(s.min()), hi=int(e.max()))
    owner = innermost(bounds, rs, re_)
    seg_s, length = bounds[:-1], np.diff(bounds)
    which = np.searchsorted(s, seg_s, side="right") - 1  # steps are disjoint and sorted
    inside = (which >= 0) & (seg_s < e[np.maximum(which, 0)])
    label = np.full(len(owner), NO_REGION, object)
    label[owner >= 0] = names[owner[owner >= 0]]
    df = pd.DataFrame({"step": which[inside], "name": label[inside], "ns": length[inside]})
    sums = df.groupby(["step", "name"], sort=False)["ns"].sum()
    out = []
    for i in range(len(s)):
        total = int(e[i] - s[i])
        rows = sorted(((str(k), int(v)) for k, v in sums.loc[i].items()),
                      key=lambda kv: (-kv[1], kv[0])) if i in sums.index.get_level_values(0) else []
        if not rows and total:
            rows = [(NO_REGION, total)]
        if len(rows) > TOP_REGIONS:
            rest = sum(v for _, v in rows[TOP_REGIONS - 1 :])
            rows = rows[: TOP_REGIONS - 1] + [("(other regions)", rest)]
        out.append(tuple(Part(k, v, _share(v, total)) for k, v in rows))
    return out


def _share(ns: int, total: int) -> float | None:
    return ns / total if total else None
