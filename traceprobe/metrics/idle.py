"""Why each GPU sat idle: every nanosecond of idle time charged to exactly one cause.

A device's idle time is the window minus its busy set. Each idle instant gets the cause
below, from the host events of the trace's process (classes in :mod:`.regions`); the
first rule that applies wins:

1. the innermost *region* covering it — a ``DataLoader`` range, an ``Optimizer.*`` range
   or the user's own ``record_function`` range (``forward``, ``backward`` …); the cause's
   ``children`` split its time by the innermost call inside it (sync call first, else the
   innermost CPU op or runtime call: an op's *self* time), ``(no CPU op)`` where none;
2. a sync call (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``.item()`` …):
   ``waiting on another device`` where another GPU of the report was busy at that
   instant, else ``synchronization``; the children name the calls;
3. the innermost CPU op or runtime call covering it (an op's self time: the time no op
   or call inside it covers);
4. ``host idle``: the process had no event at all.

So the causes partition the idle time: they sum to it exactly when all are listed (the
report lists the :data:`TOP_CAUSES` largest). Each cause carries ``ns``, ``share`` (of the
device's idle time) and ``calls`` (events of that name that own some of its time; for
``host idle`` the idle gaps that hold some).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from traceprobe.intervals import Spans, gaps, overlap, spans, union
from traceprobe.metrics.devices import DeviceBusy
from traceprobe.metrics.host import Cause, HostIdle
from traceprobe.metrics.regions import (
    LEAF_CLASSES,
    REGION_CLASSES,
    HostEvents,
    innermost,
    segments,
)

TOP_CAUSES = 5
TOP_CHILDREN = 3
HOST_IDLE = "host idle"
WAITING = "waiting on another device"
SYNCHRONIZATION = "synchronization"
NO_OP = "(no CPU op)"
KIND_ORDER = ("dataloader", "optimizer", "region", "wait", "sync", "cpu_op", "runtime",
              "host_idle")


def idle_causes(
    busy: Sequence[DeviceBusy], ev: HostEvents, lo: int, hi: int, top: int = TOP_CAUSES
) -> tuple[HostIdle, ...]:
    """Per device: idle time in ``[lo, hi)``, how much of it the host was busy, and why."""
    everything = spans(ev.start, ev.end)
    out = []
    for dev in busy:
        idle = gaps(dev.busy, lo, hi)
        others = union(*(d.busy for d in busy if d.device != dev.device))
        causes = _partition(idle, ev, others, lo, hi)
        out.append(HostIdle(dev.device, idle.length, overlap(idle, everything), causes[:top]))
    return tuple(out)


def gap_causes(
    idle: Spans, ev: HostEvents, others: Spans, lo: int, hi: int
) -> list[tuple[str, str, int] | None]:
    """Per gap of ``idle``: the cause ``(kind, name, ns)`` charged most of that gap by the
    partition above (ties in the report's order: kind, then name); None for a gap charged
    nothing. ``traceprobe annotate`` labels its idle gaps with it."""
    out: list[tuple[str, str, int] | None] = [None] * len(idle)
    df = _charges(idle, ev, others, lo, hi)
    if df is None or df.empty:
        return out
    per = df.groupby(["gap", "kind", "name"], sort=False)["ns"].sum()
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    best: dict[int, tuple[int, int, str, str]] = {}
    for (g, k_, n_), v in per.items():
        key = (-int(v), rank.get(str(k_), 99), str(n_), str(k_))
        if int(g) not in best or key < best[int(g)]:
            best[int(g)] = key
    for g, (v, _, n_, k_) in best.items():
        out[g] = (k_, n_, -v)
    return out


def _partition(idle: Spans, ev: HostEvents, others: Spans, lo: int, hi: int) -> tuple[Cause, ...]:
    df = _charges(idle, ev, others, lo, hi)
    if df is None:
        return ()
    total = int(idle.length)
    by = df.groupby(["kind", "name"], sort=False)  # per column: no dict-like agg's cost
    top = pd.DataFrame({"ns": by["ns"].sum(), "calls": by["ev"].nunique()})
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    rows = sorted(top.itertuples(), key=lambda t: (-t.ns, rank.get(t.Index[0], 99), t.Index[1]))
    kids = df[df["child"] != ""].groupby(["kind", "name", "child"], sort=False)["ns"].sum()
    child_ns: dict[tuple[str, str], dict[str, int]] = {}
    for (k_, n_, c_), v in kids.items():
        child_ns.setdefault((k_, n_), {})[c_] = int(v)
    out = []
    for t in rows:
        k_, n_ = t.Index
        children: tuple[Cause, ...] = ()
        sub = sorted(child_ns.get((k_, n_), {}).items(), key=lambda cv: (-cv[1], cv[0]))
        children = tuple(
            Cause(str(c), "", int(v), 0, _share(int(v), total)) for c, v in sub[:TOP_CHILDREN]
        )
        out.append(Cause(str(n_), str(k_), int(t.ns), int(t.calls), _share(int(t.ns), total),
                         children))
    return tuple(out)


def _charges(
    idle: Spans, ev: HostEvents, others: Spans, lo: int, hi: int
) -> pd.DataFrame | None:
    """One row per idle segment: its cause's kind and name, the inner call (child), its ns,
    the owning event (``ev``) and the idle gap it lies in (``gap``); None without idle time."""
    if idle.empty:
        return None
    from traceprobe.intervals import measure_within

    near = measure_within(idle, ev.start, ev.end) > 0
    st, en, nm, cls = ev.start[near], ev.end[near], ev.name[near], ev.cls[near]
    bounds = segments(idle.starts, idle.ends, st, en, others.starts, others.ends, lo=lo, hi=hi)
    s0, length = bounds[:-1], np.diff(bounds)
    j = np.searchsorted(idle.starts, s0, side="right") - 1
    in_idle = (j >= 0) & (s0 < idle.ends[np.maximum(j, 0)]) & (length > 0)
    gap_of = j

    def owner(classes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        idx = np.flatnonzero(np.isin(cls, classes))
        if idx.size == 0:
            return np.full(int(in_idle.sum()), -1, np.int64), idx
        o = innermost(bounds, st[idx], en[idx])
        return np.where(o >= 0, idx[np.maximum(o, 0)], -1)[in_idle], idx

    reg, _ = owner(REGION_CLASSES)
    syn, _ = owner(("sync",))
    leaf, _ = owner(tuple(c for c in LEAF_CLASSES if c != "sync"))
    s0, length, gap_of = s0[in_idle], length[in_idle], gap_of[in_idle]
    k = np.searchsorted(others.starts, s0, side="right") - 1
    other_busy = (k >= 0) & (s0 < others.ends[np.maximum(k, 0)]) if not others.empty else (
        np.zeros(len(s0), bool))

    n = len(s0)
    kind = np.full(n, "host_idle", object)
    name = np.full(n, HOST_IDLE, object)
    child = np.full(n, "", object)
    event = gap_of.astype(np.int64) + len(st)  # host idle: "calls" are idle gaps
    inner = np.where(syn >= 0, syn, leaf)
    inner_name = np.full(n, NO_OP, object)
    inner_name[inner >= 0] = nm[inner[inner >= 0]]

    r = reg >= 0
    kind[r], name[r], child[r], event[r] = cls[reg[r]], nm[reg[r]], inner_name[r], reg[r]
    s = ~r & (syn >= 0)
    kind[s] = np.where(other_busy[s], "wait", "sync")
    name[s] = np.where(other_busy[s], WAITING, SYNCHRONIZATION)
    child[s], event[s] = nm[syn[s]], syn[s]
    lf = ~r & ~s & (leaf >= 0)
    kind[lf], name[lf], event[lf] = cls[leaf[lf]], nm[leaf[lf]], leaf[lf]

    return pd.DataFrame(
        {"kind": kind, "name": name, "child": child, "ns": length, "ev": event, "gap": gap_of}
    )


def _share(ns: int, total: int) -> float | None:
    return ns / total if total else None
