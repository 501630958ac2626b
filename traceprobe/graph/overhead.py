"""The profiler's own host cost per recorded CPU event, estimated from the trace alone.

PyTorch's profiler does its bookkeeping for an event *outside* the event's timestamps: on
entry it records the op (with ``record_shapes``, its inputs' shapes and types) and only then
takes the start time; on exit it takes the end time and then files the event. So on each
thread the recording cost sits between event boundaries:

* **enter**: from a parent's start to its first child's start, two starts with no end between
  (the parent's own dispatch, then the child's entry bookkeeping);
* **exit**: from a child's end to its parent's end, two ends with no start between (the
  child's exit bookkeeping, then the parent's own return).

The estimate is ``enter_ns + exit_ns``: the median of every start → start interval plus the
median of every end → end interval between consecutive boundaries of one thread, over the
threads' events in the profiled steps (the whole trace when it has none). It is an estimate
of the recording cost *between* events; what the profiler adds *inside* an event (CUPTI's
callbacks inside a runtime call) no interval shows. The real work in those intervals (a
dispatch of a few hundred ns) counts with it. docs/FIGURES.md ("The profiler's own cost")
defines it; docs/WHATIF.md checks it against unprofiled runs of the same loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceprobe.timeline import Timeline

MIN_INTERVALS = 20  # fewer start->start or end->end intervals than this: no estimate (0 ns)


@dataclass(frozen=True)
class ProfilerCost:
    ns: float  # per recorded CPU event: enter_ns + exit_ns (0 when too few intervals)
    enter_ns: float
    exit_ns: float
    n_enter: int  # start -> start intervals the median is over
    n_exit: int  # end -> end intervals

    def describe(self) -> str:
        if not self.ns:
            return (f"too few nested events to estimate the profiler's cost ({self.n_enter} "
                    f"start-to-start and {self.n_exit} end-to-end intervals, "
                    f"{MIN_INTERVALS} needed): nothing removed")
        return (f"estimated from the trace: median parent-start to child-start "
                f"{self.enter_ns:.0f} ns (of {self.n_enter}) + median child-end to parent-end "
                f"{self.exit_ns:.0f} ns (of {self.n_exit})")


def boundary_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start -> start, end -> end) intervals in ns between consecutive boundaries of one
    thread's events (``start``/``end`` in ns, any order). At equal times an end comes before
    a start (an event that ends as the next begins is its sibling, not its parent)."""
    t = np.concatenate([start, end]).astype(np.int64)
    is_end = np.concatenate([np.zeros(len(start), bool), np.ones(len(end), bool)])
    order = np.lexsort((~is_end, t))  # by time, ends first at ties
    t, is_end = t[order], is_end[order]
    d = np.diff(t)
    a, b = is_end[:-1], is_end[1:]
    return d[~a & ~b], d[a & b]


def profiler_cost(tl: Timeline) -> ProfilerCost:
    """The estimate of the module docstring, on ``tl``'s CPU events."""
    cpu = tl.cpu[tl.cpu["kind"].to_numpy() != "overhead"]  # Kineto's own, on no thread
    if len(tl.steps):
        lo, hi = int(tl.steps["start"].min()), int(tl.steps["end"].max())
        cpu = cpu[(cpu["start"].to_numpy() >= lo) & (cpu["end"].to_numpy() <= hi)]
    enters, exits = [], []
    for _, ev in cpu.groupby(["pid", "tid"], sort=False):
        ss, ee = boundary_intervals(ev["start"].to_numpy(np.int64), ev["end"].to_numpy(np.int64))
        enters.append(ss)
        exits.append(ee)
    ss = np.concatenate(enters) if enters else np.empty(0, np.int64)
    ee = np.concatenate(exits) if exits else np.empty(0, np.int64)
    if min(len(ss), len(ee)) < MIN_INTERVALS:
        return ProfilerCost(0.0, 0.0, 0.0, len(ss), len(ee))
    enter, exit_ = float(np.median(ss)), float(np.median(ee))
    return ProfilerCost(enter + exit_, enter, exit_, len(ss), len(ee))
