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
4. ``Python (untraced)`` (kind ``host_idle``; named "host idle" before): the process had
   no event at all — the interpreter ran code the profiler does not record, or slept.

Rules 1-4 are the host account of :mod:`.regions` (:func:`~.regions.owners`) over the
whole process; the critical path reads the same account thread by thread.

So the causes partition the idle time: they sum to it exactly when all are listed (the
report lists the :data:`TOP_CAUSES` largest). Each cause carries ``ns``, ``share`` (of the
device's idle time) and ``calls`` (events of that name that own some of its time; for
``host idle`` the idle gaps that hold some).

:func:`idle_causes` does this for many windows at once (``--step all``): the
windows lie end to end on one :class:`~.grouping.Axis`, the innermost events of every window
are found in one sweep, each device's idle set is one difference over all windows, and the
charged segments are summed per (window, kind, name) in one sort, then ranked in another.
Per window only the result's dataclasses are built in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.intervals import Spans, difference, measure_within, offsets, spans
from traceprobe.metrics.devices import DeviceBusy
from traceprobe.metrics.grouping import (
    Axis,
    Windows,
    factorized,
    grouped_sum,
    key_changes,
    sorted_unique,
    string_ranks,
)
from traceprobe.metrics.host import Cause, HostIdle
from traceprobe.metrics.regions import UNTRACED, HostEvents, owners

TOP_CAUSES = 5
TOP_CHILDREN = 3
HOST_IDLE = UNTRACED  # was "host idle": the process had no event (docs/FIGURES.md)
WAITING = "waiting on another device"
SYNCHRONIZATION = "synchronization"
NO_OP = "(no CPU op)"
KIND_ORDER = ("dataloader", "optimizer", "region", "wait", "sync", "cpu_op", "runtime",
              "host_idle")
_KIND = {k: i for i, k in enumerate(KIND_ORDER)}  # a kind's code is its rank in the report


def idle_causes(
    busy_per_window: Sequence[Sequence[DeviceBusy]],
    ev: HostEvents,
    windows: Windows,
    top: int = TOP_CAUSES,
) -> list[tuple[HostIdle, ...]]:
    """Per window, per device: idle time in the window, how much of it the host was busy,
    and why. Item ``i`` is the result for window ``i`` with the busy sets
    ``busy_per_window[i]`` and the events of ``ev`` whose ``win`` is ``i`` (all of them
    when ``ev`` has no ``win``).

    All windows lie on one :class:`~.grouping.Axis`; the innermost events are found once for
    all of them, then for the ``j``-th device of every window at once: its idle set, the
    other devices' busy set, the charged segments and their sums per (window, cause).
    """
    n = windows.n
    axis = Axis.of(windows.lo, windows.hi)
    laid = _lay(ev, axis)
    slots = [(w, j, d) for w, devs in enumerate(busy_per_window) for j, d in enumerate(devs)]
    out: list[list[HostIdle]] = [[] for _ in range(n)]
    if not slots:
        return [()] * n
    slot_win = np.array([w for w, _, _ in slots], np.int64)
    slot_pos = np.array([j for _, j, _ in slots], np.int64)
    dev_ids = pd.factorize(pd.Series([d.device for _, _, d in slots], dtype=object))[0]
    sizes = np.array([len(d.busy) for _, _, d in slots], np.int64)
    piece = np.repeat(np.arange(len(slots)), sizes)
    pwin = slot_win[piece]
    cat = [d.busy for _, _, d in slots if len(d.busy)]
    ps = axis.put(np.concatenate([b.starts for b in cat]) if cat else piece, pwin)
    pe = axis.put(np.concatenate([b.ends for b in cat]) if cat else piece, pwin)
    for j in range(int(slot_pos.max()) + 1):
        col = np.flatnonzero(slot_pos == j)
        has = np.zeros(n, bool)
        has[slot_win[col]] = True
        dev = np.full(n, -1, np.int64)
        dev[slot_win[col]] = dev_ids[col]
        mine = slot_pos[piece] == j
        idle = difference(axis.windows(has), spans(ps[mine], pe[mine]))
        theirs = has[pwin] & (dev_ids[piece] != dev[pwin])
        others = spans(ps[theirs], pe[theirs])
        where = axis.win_at(idle.starts)
        idle_ns = grouped_sum(idle.ends - idle.starts, where, n)
        host_ns = grouped_sum(measure_within(laid.everything, idle.starts, idle.ends), where, n)
        causes = _partition(_charges(laid, idle.starts, idle.ends, others), laid, idle_ns, top)
        for k in col.tolist():
            w = slots[k][0]
            out[w].append(HostIdle(slots[k][2].device, int(idle_ns[w]), int(host_ns[w]),
                                   causes[w]))
    return [tuple(x) for x in out]


def gap_causes(
    idle: Spans, ev: HostEvents, others: Spans, lo: int, hi: int
) -> list[tuple[str, str, int] | None]:
    """Per gap of ``idle``: the cause ``(kind, name, ns)`` charged most of that gap by the
    partition above (ties in the report's order: kind, then name); None for a gap charged
    nothing. ``traceprobe annotate`` labels its idle gaps with it."""
    out: list[tuple[str, str, int] | None] = [None] * len(idle)
    axis = Axis.of(np.array([lo]), np.array([hi]))
    laid = _lay(ev, axis)
    zero, zo = np.zeros(len(idle), np.int64), np.zeros(len(others), np.int64)
    theirs = spans(axis.put(others.starts, zo), axis.put(others.ends, zo))
    ch = _charges(laid, axis.put(idle.starts, zero), axis.put(idle.ends, zero), theirs)
    if not ch.ns.size:
        return out
    (gap_of, kind, name), ns, _ = _sums([ch.gap, ch.kind, ch.name], ch.ns)
    order = np.lexsort((laid.name_rank[name], kind, -ns, gap_of))
    best = order[key_changes(gap_of[order])]
    for gap, k, nm, v in zip(gap_of[best].tolist(), kind[best].tolist(), name[best].tolist(),
                             ns[best].tolist(), strict=True):
        out[gap] = (KIND_ORDER[k], laid.names[nm], v)
    return out


@dataclass(frozen=True)
class _Laid:
    """The host events of all windows on the axis, with what the partition needs of them:
    codes of their kinds (:data:`KIND_ORDER`) and names (into ``names``, which ends with
    the causes' own names), and the innermost region, sync and other leaf event of each
    segment between consecutive event boundaries (``bounds``)."""

    n_events: int
    base: np.ndarray  # the axis's window bases
    kind: np.ndarray  # per event: its class's code (int8)
    name: np.ndarray  # per event: its name's code (the account's index dtype)
    names: list[str]
    name_rank: np.ndarray  # per name code: its rank in string order
    bounds: np.ndarray
    reg: np.ndarray  # per segment of bounds: the innermost event of its class set, or -1
    syn: np.ndarray
    leaf: np.ndarray
    everything: Spans  # the time any event covers


_SPECIAL = (WAITING, SYNCHRONIZATION, HOST_IDLE, NO_OP)  # codes len(uniques) + 0..3


def _lay(ev: HostEvents, axis: Axis) -> _Laid:
    count = len(ev.start)
    win = ev.win if ev.win is not None else np.zeros(count, np.int64)
    s, e = axis.put(ev.start, win), axis.put(ev.end, win)
    everything = spans(s, e)  # (first: each step below keeps more arrays alive)
    # the innermost rule's order, by the events' own times, window by window (lexsort is
    # stable: among equal times the later event ranks higher)
    index = np.int32 if count < 2**31 else np.int64
    rank = np.empty(count, index)
    rank[np.lexsort((-ev.end, ev.start, win))] = np.arange(count, dtype=index)
    del win
    bounds = sorted_unique(np.concatenate([s, e, axis.base, axis.base + (axis.hi - axis.lo)]),
                           mine=True)
    own = owners(ev.cls, s, e, rank, bounds)  # the host account, over the whole process
    # each array goes when last read, and the codes are made after the account's search: a
    # lower peak (this is analyze's)
    del rank, s, e
    codes, uniques = factorized(ev.name)
    codes = codes.astype(own.reg.dtype)
    names = [str(u) for u in uniques] + list(_SPECIAL)
    cls_codes, cls_uniques = factorized(ev.cls)
    kind = np.array([_KIND[str(c)] for c in cls_uniques], np.int8)[cls_codes]
    del cls_codes
    return _Laid(
        count, axis.base, kind, codes, names, string_ranks(names),
        bounds, own.reg, own.syn, own.leaf, everything,
    )


@dataclass(frozen=True)
class _Charges:
    """One row per idle segment (on the axis): its window, its cause's kind and name codes,
    the inner call's name code (``child``, -1 for none), its ns, the owning event (``ev``;
    for host idle ``n_events`` + the gap) and the idle gap it lies in."""

    win: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    child: np.ndarray
    ns: np.ndarray
    ev: np.ndarray
    gap: np.ndarray


def _charges(laid: _Laid, idle_s: np.ndarray, idle_e: np.ndarray, others: Spans) -> _Charges:
    """Charge every idle instant (the rules of the module docstring), all windows at once."""
    empty = np.empty(0, np.int64)
    if not idle_s.size:
        return _Charges(*([empty] * 7))
    # the segments between consecutive boundaries that start in an idle gap: of the
    # events' boundaries only those inside a gap can start or end one (a gap's end is a
    # boundary), so the others are left out before the sort
    g = np.searchsorted(idle_s, laid.bounds, side="right") - 1
    inside = laid.bounds[(g >= 0) & (laid.bounds < idle_e[np.maximum(g, 0)])]
    del g
    bounds = sorted_unique(
        np.concatenate([inside, idle_s, idle_e, others.starts, others.ends]), mine=True)
    x, length = bounds[:-1], np.diff(bounds)
    j = np.searchsorted(idle_s, x, side="right") - 1
    ok = (j >= 0) & (x < idle_e[np.maximum(j, 0)]) & (length > 0)
    x, length, gap = x[ok], length[ok], j[ok]
    at = np.clip(np.searchsorted(laid.bounds, x, side="right") - 1, 0,
                 max(laid.bounds.size - 2, 0))
    none = np.full(x.size, -1, np.int64)
    reg, syn, leaf = ((own[at] if own.size else none) for own in (laid.reg, laid.syn, laid.leaf))
    if others.empty:
        other_busy = np.zeros(x.size, bool)
    else:
        k = np.searchsorted(others.starts, x, side="right") - 1
        other_busy = (k >= 0) & (x < others.ends[np.maximum(k, 0)])

    u = len(laid.names) - len(_SPECIAL)
    kind = np.full(x.size, _KIND["host_idle"], np.int8)  # (codes in small types: a lower peak)
    name = np.full(x.size, u + 2, laid.name.dtype)
    child = np.full(x.size, -1, laid.name.dtype)
    event = gap + laid.n_events  # host idle: its "calls" are idle gaps
    inner = np.where(syn >= 0, syn, leaf)
    inner_name = np.where(inner >= 0, laid.name[np.maximum(inner, 0)], u + 3) if laid.n_events \
        else np.full(x.size, u + 3, np.int64)

    r = reg >= 0
    kind[r], name[r], child[r], event[r] = (laid.kind[reg[r]], laid.name[reg[r]], inner_name[r],
                                            reg[r])
    s = ~r & (syn >= 0)
    kind[s] = np.where(other_busy[s], _KIND["wait"], _KIND["sync"])
    name[s] = np.where(other_busy[s], u, u + 1)
    child[s], event[s] = laid.name[syn[s]], syn[s]
    lf = ~r & ~s & (leaf >= 0)
    kind[lf], name[lf], event[lf] = laid.kind[leaf[lf]], laid.name[leaf[lf]], leaf[lf]
    win = np.searchsorted(laid.base, x, side="right") - 1
    return _Charges(win, kind, name, child, length, event, gap)


def _partition(
    ch: _Charges, laid: _Laid, idle_ns: np.ndarray, top: int
) -> list[tuple[Cause, ...]]:
    """Per window with idle time: its causes, largest first (ties: kind in the report's
    order, then name), the ``top`` first, each with its ``TOP_CHILDREN`` largest children.
    One sort by (window, kind, name) sums them all; one more ranks them."""
    if not ch.ns.size:
        return [()] * len(idle_ns)
    (gw, gk, gn), ns, calls = _sums([ch.win, ch.kind, ch.name], ch.ns, ch.ev)
    order = np.lexsort((laid.name_rank[gn], gk, -ns, gw))
    keep = order[_rank_in_run(gw[order]) < top]
    m = ch.child >= 0
    (cw, ck, cn, cc), cns, _ = _sums([ch.win[m], ch.kind[m], ch.name[m], ch.child[m]], ch.ns[m])
    corder = np.lexsort((laid.name_rank[cc], -cns, cn, ck, cw))
    ckeep = corder[_rank_in_run(cw[corder], ck[corder], cn[corder]) < TOP_CHILDREN]
    names, size = laid.names, len(laid.names)
    # a (window, kind, name) as one int: its children are found by it
    pkey = ((cw[ckeep] * len(KIND_ORDER) + ck[ckeep]) * size + cn[ckeep]).tolist()
    kids: dict[int, list[tuple[str, int]]] = {}
    for key, c, v in zip(pkey, cc[ckeep].tolist(), cns[ckeep].tolist(), strict=True):
        kids.setdefault(key, []).append((names[c], v))
    totals = idle_ns.tolist()
    wins = gw[keep]
    keys = ((wins * len(KIND_ORDER) + gk[keep]) * size + gn[keep]).tolist()
    causes = []
    for w, key, k, nm, v, c in zip(wins.tolist(), keys, gk[keep].tolist(), gn[keep].tolist(),
                                   ns[keep].tolist(), calls[keep].tolist(), strict=True):
        total = totals[w]
        sub = kids.get(key)
        children = tuple(Cause(cn_, "", cv, 0, cv / total if total else None)
                         for cn_, cv in sub) if sub else ()
        causes.append(Cause(names[nm], KIND_ORDER[k], v, c, v / total if total else None,
                            children))
    at = offsets(wins, len(totals)).tolist()
    return [tuple(causes[at[w] : at[w + 1]]) for w in range(len(totals))]


def _sums(
    keys: list[np.ndarray], ns: np.ndarray, ev: np.ndarray | None = None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Group rows by ``keys`` (one sort): each group's keys (sorted by them), its summed
    ``ns`` and its number of distinct ``ev`` (zeros without ``ev``)."""
    sort_by = ([ev] if ev is not None else []) + keys[::-1]
    order = np.lexsort(tuple(sort_by))
    ks = [k[order] for k in keys]
    first = np.flatnonzero(key_changes(*ks))
    if not first.size:
        empty = np.empty(0, np.int64)
        return [empty] * len(keys), empty, empty
    total = np.add.reduceat(ns[order], first)
    calls = (np.add.reduceat(key_changes(*ks, ev[order]).astype(np.int64), first)
             if ev is not None else np.zeros(first.size, np.int64))
    return [k[first] for k in ks], total, calls


def _rank_in_run(*sorted_keys: np.ndarray) -> np.ndarray:
    """Each row's position in its run of equal ``sorted_keys`` (0 for the run's first)."""
    idx = np.arange(sorted_keys[0].shape[0])
    start = np.maximum.accumulate(np.where(key_changes(*sorted_keys), idx, 0))
    return idx - start


def _share(ns: int, total: int) -> float | None:
    return ns / total if total else None
