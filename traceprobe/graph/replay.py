"""Discrete-event replay of a :class:`~traceprobe.graph.model.Graph`.

Every node starts at the latest of its constraints (each a predecessor's end, or a launch
call's start, plus the constraint's delay) and lasts its duration; a host wait ends at the
later of ``start + base`` and each waited op's end plus ``post``. Nodes are evaluated in an
order in which every predecessor comes first (measured start, waits at their measured end;
a topological sort when a scenario breaks that order). Resources are constraints too: the
previous GPU-filling kernel of a device, the previous copy of a direction, the previous
call of a host thread. A :class:`Plan` is the graph's parameters, which scenarios change.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from traceprobe.errors import GraphCycle
from traceprobe.graph.delays import resource_prev
from traceprobe.graph.delays import stream_prev as _stream_prev
from traceprobe.graph.model import GPU, NO_SYNC, SYNC_DEVICE, SYNC_ONE, Graph
from traceprobe.intervals import sorted_unique

END, START = 0, 1
C_HOST, C_LAUNCH, C_STREAM, C_RESOURCE, C_DEP, C_WAIT, C_HAND = range(7)
CONSTRAINT_NAMES = ("host", "launch", "stream", "resource", "dep", "wait", "handoff")


@dataclass
class Plan:
    """What a replay runs: the graph's durations, gaps, lanes and waits, as a scenario left them."""

    dur: np.ndarray  # GPU ops and host calls (a wait: its base)
    gap: np.ndarray
    lane: np.ndarray
    lanes: list[tuple]
    wait_kept: np.ndarray
    d_launch: np.ndarray
    launch: np.ndarray  # the host call each GPU op is issued by (-1: none known)
    d_stream: np.ndarray
    d_res: np.ndarray
    hand: np.ndarray  # the graph's hand-offs (succ, pred, delay), as a scenario left them
    deps: list[tuple[int, int, int]] = field(default_factory=list)  # (succ, pred, delay ns)
    no_inferred: np.ndarray | None = None  # drop the inferred dep of these nodes
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, g: Graph) -> Plan:
        dur = np.where(g.sync != NO_SYNC, g.base, g.end - g.start)
        return cls(
            dur=dur.astype(np.int64), gap=g.gap.copy(), lane=g.lane.copy(), lanes=list(g.lanes),
            wait_kept=g.sync != NO_SYNC, d_launch=g.d_launch.copy(), launch=g.launch.copy(),
            d_stream=g.d_stream.copy(), d_res=g.d_res.copy(), hand=g.hand.copy(),
        )

    def new_lane(self, label: tuple) -> int:
        if label in self.lanes:
            return self.lanes.index(label)
        self.lanes.append(label)
        return len(self.lanes) - 1


@dataclass
class Replay:
    start: np.ndarray
    end: np.ndarray
    bind: np.ndarray  # constraint index that set the start, -1 anchored
    ebind: np.ndarray  # constraint index that set a wait's end, -1 its own duration
    pred: np.ndarray  # per constraint
    ref: np.ndarray
    delay: np.ndarray
    ctype: np.ndarray
    succ: np.ndarray  # per constraint: the node it constrains


def constraints(g: Graph, p: Plan) -> tuple[np.ndarray, ...]:
    """(succ, pred, ref, delay, ctype, is_end) arrays of every constraint of the plan."""
    parts: list[tuple[np.ndarray, ...]] = []

    def add(succ, pred, ref, delay, ct, is_end=False):  # type: ignore[no-untyped-def]
        succ = np.asarray(succ, np.int64)
        k = len(succ)
        parts.append((succ, np.asarray(pred, np.int64), np.full(k, ref, np.int8),
                      np.asarray(delay, np.int64), np.full(k, ct, np.int8), np.full(k, is_end)))

    hostish = np.flatnonzero((g.ntype != GPU) & (g.prev >= 0))
    add(hostish, g.prev[hostish], END, p.gap[hostish], C_HOST)
    ops = np.flatnonzero(g.ntype == GPU)
    lch = ops[p.launch[ops] >= 0]
    add(lch, p.launch[lch], START, p.d_launch[lch], C_LAUNCH)
    sp = _stream_prev(g, ops, p.lane[ops])
    k = sp >= 0
    add(ops[k], sp[k], END, p.d_stream[ops[k]], C_STREAM)
    rp = resource_prev(g, ops, g.fills[ops])
    k = rp >= 0
    add(ops[k], rp[k], END, p.d_res[ops[k]], C_RESOURCE)
    dep = ops[g.dep[ops] >= 0]
    if p.no_inferred is not None:
        dep = dep[~p.no_inferred[dep]]
    add(dep, g.dep[dep], END, g.d_dep[dep], C_DEP)
    if p.deps:
        a = np.array(p.deps, np.int64)
        add(a[:, 0], a[:, 1], END, a[:, 2], C_DEP)
    if len(p.hand):
        add(p.hand[:, 0], p.hand[:, 1], END, p.hand[:, 2], C_HAND)
    one = np.flatnonzero((g.sync == SYNC_ONE) & p.wait_kept)
    add(one, g.wait[one], END, g.post[one], C_WAIT, True)
    dev = np.flatnonzero((g.sync == SYNC_DEVICE) & p.wait_kept)
    if len(dev) and len(lch):
        # a device-wide wait: the last op launched before it on every stream (streams run
        # their ops in order, so that op ends last)
        for ln in sorted_unique(p.lane[lch]).tolist():
            on = lch[p.lane[lch] == ln]
            on = on[np.argsort(p.launch[on], kind="stable")]
            last = np.searchsorted(p.launch[on], dev) - 1
            hit = last >= 0
            add(dev[hit], on[last[hit]], END, g.post[dev[hit]], C_WAIT, True)
    cols = [np.concatenate([q[j] for q in parts]) for j in range(6)]
    return tuple(cols)


def replay(g: Graph, p: Plan) -> Replay:
    succ, pred, ref, delay, ctype, is_end = constraints(g, p)
    n = len(g)
    # within a node's constraints the one released last comes first: it wins a tie (the
    # path follows the work that finished last, not a stream that drained long before)
    released = np.where(ref == END, g.end[pred], g.start[pred])
    o = np.lexsort((-released, is_end, succ))
    succ, pred, ref, delay, ctype, is_end = (a[o] for a in (succ, pred, ref, delay, ctype, is_end))
    fixed = _measured_fixed_point(g, p, succ, pred, ref, delay, ctype, is_end)
    if fixed is not None:
        return fixed
    order = _order(g, succ, pred, ref, is_end)
    ptr = np.searchsorted(succ * 2 + is_end, np.arange(2 * n + 1)).tolist()
    anchor = np.where(g.ntype == GPU, g.start, g.origin + p.gap).tolist()
    dur = p.dur.tolist()
    pl, rl, dl = pred.tolist(), ref.tolist(), delay.tolist()
    Sl, El = [0] * n, [0] * n
    bl, ebl = [-1] * n, [-1] * n
    for ev in order.tolist():
        i = ev >> 1
        best = None
        b = -1
        for k in range(ptr[ev], ptr[ev + 1]):
            q = pl[k]
            t = (El[q] if rl[k] == END else Sl[q]) + dl[k]
            if best is None or t > best:
                best, b = t, k
        if ev & 1 == 0:  # start
            Sl[i], bl[i] = (anchor[i], -1) if best is None else (best, b)
        else:
            e = Sl[i] + dur[i]
            if best is not None and best > e:
                El[i], ebl[i] = best, b
            else:
                El[i] = e
    return Replay(np.array(Sl, np.int64), np.array(El, np.int64), np.array(bl, np.int64),
                  np.array(ebl, np.int64), pred, ref, delay, ctype, succ)


def _measured_fixed_point(g: Graph, p: Plan, succ: np.ndarray, pred: np.ndarray,
                          ref: np.ndarray, delay: np.ndarray, ctype: np.ndarray,
                          is_end: np.ndarray) -> Replay | None:
    """The replay without the loop when the measured times already satisfy every node's
    equation (start = latest constraint, end = later of start + duration and the latest
    end constraint) — the case of an unchanged plan. Evaluating a fixed point in
    topological order gives it back, so this *is* the replay: same times, and the same
    binding constraint (the first that reaches the maximum, as the loop picks it)."""
    n = len(g)
    value = np.where(ref == END, g.end[pred], g.start[pred]) + delay
    key = succ * 2 + is_end.astype(np.int64)  # constraints are sorted by it
    first = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, bool)
    heads = np.flatnonzero(first)
    best = np.maximum.reduceat(value, heads) if len(heads) else value[:0]
    gkey = key[heads]
    group_best = np.repeat(best, np.diff(np.r_[heads, len(key)]))
    hit = value == group_best
    # the first constraint of each group that reaches the group's maximum
    idx = np.flatnonzero(hit)
    idx = idx[np.r_[True, key[idx][1:] != key[idx][:-1]]] if len(idx) else idx
    bind = np.full(n, -1, np.int64)
    ebind = np.full(n, -1, np.int64)
    start = np.where(g.ntype == GPU, g.start, g.origin + p.gap)
    s_grp = (gkey & 1) == 0
    start[gkey[s_grp] >> 1] = best[s_grp]
    bind[key[idx][(key[idx] & 1) == 0] >> 1] = idx[(key[idx] & 1) == 0]
    end = start + p.dur
    e_nodes = gkey[~s_grp] >> 1
    later = best[~s_grp] > end[e_nodes]
    end[e_nodes[later]] = best[~s_grp][later]
    e_idx = idx[(key[idx] & 1) == 1]
    ebind[(key[e_idx] >> 1)[later]] = e_idx[later]
    if not (np.array_equal(start, g.start) and np.array_equal(end, g.end)):
        return None
    return Replay(start, end, bind, ebind, pred, ref, delay, ctype, succ)


def _order(g: Graph, succ: np.ndarray, pred: np.ndarray, ref: np.ndarray,
           is_end: np.ndarray) -> np.ndarray:
    """Events 2i (node i starts) and 2i+1 (it ends) in an order in which every predecessor
    comes first: measured time order when that works, else a topological sort close to it."""
    n = len(g)
    key = np.concatenate([g.start, g.end])
    ev = np.concatenate([np.arange(n) * 2, np.arange(n) * 2 + 1])
    # at one time: ends of non-empty nodes, then host starts, then GPU starts; an empty
    # node's end right after its start
    rs = np.where(g.ntype == GPU, 2, 1)
    rank = np.concatenate([rs, np.where(g.end > g.start, 0, rs)])
    order = ev[np.lexsort((ev, rank, key))]
    pos = np.empty(2 * n, np.int64)
    pos[order] = np.arange(2 * n)
    src = np.where(ref == END, pred * 2 + 1, pred * 2)
    dst = succ * 2 + is_end
    own_s, own_e = np.arange(n) * 2, np.arange(n) * 2 + 1
    src = np.concatenate([src, own_s])
    dst = np.concatenate([dst, own_e])
    if (pos[src] < pos[dst]).all():
        return order
    m = 2 * n
    indeg = np.bincount(dst, minlength=m)
    o = np.argsort(src, kind="stable")
    out_ptr = np.searchsorted(src[o], np.arange(m + 1)).tolist()
    out = dst[o].tolist()
    deg = indeg.tolist()
    posl = pos.tolist()
    heap = [(posl[i], i) for i in range(m) if deg[i] == 0]
    heapq.heapify(heap)
    res = []
    while heap:
        _, i = heapq.heappop(heap)
        res.append(i)
        for k in range(out_ptr[i], out_ptr[i + 1]):
            j = out[k]
            deg[j] -= 1
            if deg[j] == 0:
                heapq.heappush(heap, (posl[j], j))
    if len(res) < m:
        raise GraphCycle(f"the dependency graph has a cycle ({m - len(res)} events on it)")
    return np.array(res, np.int64)
