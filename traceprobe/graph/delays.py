"""The delays of the graph's constraints, measured: host waits and GPU ops.

Split from :mod:`.model` (which builds the nodes and calls these): which host calls wait
and for what (``host_waits``), and each GPU op's launch, stream and resource delays with
the inferred cross-stream dependencies (``gpu_delays``); ``stream_prev`` and
``resource_prev`` give the previous op of a lane or of an exclusive resource, for the
replay too. The rules are in :mod:`.model`'s docstring and docs/FIGURES.md.
"""

from __future__ import annotations

import numpy as np

from traceprobe.graph.model import (
    COPY,
    DEFAULT_LAUNCH_NS,
    DEFAULT_QUEUE_NS,
    DEFAULT_SYNC_NS,
    GPU,
    HOST,
    KERNEL,
    NO_SYNC,
    QUEUE_FULL,
    SYNC_DEVICE,
    SYNC_NAME,
    SYNC_ONE,
    TOLERANCE_NS,
    UNEXPLAINED_NS,
    Graph,
)


def host_waits(g: Graph) -> None:
    """Mark each host wait, the op it waited for, and its base and post (module docstring)."""
    calls = np.flatnonzero(g.ntype == HOST)
    if not len(calls):
        return
    is_sync = {x: bool(SYNC_NAME.search(str(x))) for x in set(g.name[calls].tolist())}
    named = np.array([is_sync[x] for x in g.name[calls].tolist()], bool)
    gpu = np.flatnonzero(g.ntype == GPU)
    launched = gpu[g.launch[gpu] >= 0]
    lstart = g.start[g.launch[launched]]
    by_end = launched[np.argsort(g.end[launched], kind="stable")]
    ends = g.end[by_end]
    lst = g.start[g.launch[by_end]]
    # blocking copies: a launch that returned after its own copy ended
    own = np.full(len(g), -1, np.int64)
    cp = launched[g.gkind[launched] == COPY]
    own[g.launch[cp]] = cp
    blocking = (own[calls] >= 0) & (g.end[calls] >= g.end[np.maximum(own[calls], 0)])
    for c, is_named in zip(calls[named | blocking].tolist(), named[named | blocking].tolist(),
                           strict=True):
        nm = str(g.name[c])
        s, e = g.start[c], g.end[c]
        if "DeviceSynchronize" in nm or "CtxSynchronize" in nm:
            g.sync[c] = SYNC_DEVICE
            before = launched[lstart < s]
            w = int(before[np.argmax(g.end[before])]) if len(before) else -1
        elif own[c] >= 0 and not is_named:
            g.sync[c] = SYNC_ONE
            w = int(own[c])
        else:
            g.sync[c] = SYNC_ONE
            k = int(np.searchsorted(ends, e + TOLERANCE_NS, side="right")) - 1
            while k >= 0 and lst[k] >= s:
                k -= 1
            w = int(by_end[k]) if k >= 0 else -1
        if w < 0:
            g.sync[c] = NO_SYNC
            continue
        g.wait[c] = w
    _sync_delays(g)
    queue_waits(g)


def queue_waits(g: Graph) -> None:
    """Launch calls that waited for a slot of the launch queue (``g.queued``): when the call
    began, at least :data:`QUEUE_FULL` ops launched before it had not finished, and it
    lasted more than twice the median launch call. It waits, as a host wait does, for the
    op launched before it that ended last before it returned (the completion that freed
    the slot); its own cost is the median launch call."""
    calls = np.flatnonzero((g.ntype == HOST) & g.launches & (g.sync == NO_SYNC))
    gpu = np.flatnonzero(g.ntype == GPU)
    if not len(calls) or len(gpu) < QUEUE_FULL:
        return
    cs, ce = g.start[calls], g.end[calls]
    dur = ce - cs
    typical = int(np.median(dur))
    # an op whose launch the trace lacks (issued before the profiler recorded calls, as the
    # queue's backlog is after a warm-up) was launched before every call
    issued = np.where(g.launch[gpu] >= 0, g.start[np.maximum(g.launch[gpu], 0)],
                      np.iinfo(np.int64).min)
    lst = np.sort(issued)
    by_end = gpu[np.argsort(g.end[gpu], kind="stable")]
    ends = g.end[by_end]
    issued_at = np.full(len(g), np.iinfo(np.int64).min, np.int64)
    issued_at[gpu] = issued
    outstanding = np.searchsorted(lst, cs, side="left") - np.searchsorted(ends, cs, side="right")
    full = np.flatnonzero((outstanding >= QUEUE_FULL) & (dur > 2 * typical))
    for r in full.tolist():
        c = int(calls[r])
        k = int(np.searchsorted(ends, ce[r], side="right")) - 1
        while k >= 0 and issued_at[by_end[k]] >= cs[r]:
            k -= 1
        if k < 0 or ends[k] <= cs[r]:
            continue
        w = int(by_end[k])
        g.sync[c], g.wait[c], g.queued[c] = SYNC_ONE, w, True
        g.base[c] = min(typical, int(dur[r]))
        g.post[c] = int(ce[r] - g.end[w])


def _sync_delays(g: Graph) -> None:
    sy = np.flatnonzero(g.sync != NO_SYNC)
    if not len(sy):
        g.typical.update(sync_ns=DEFAULT_SYNC_NS, post_ns=DEFAULT_SYNC_NS)
        return
    s, e, we = g.start[sy], g.end[sy], g.end[g.wait[sy]]
    waited = we > s
    dur = e - s
    typ_base = int(np.median(dur[~waited])) if (~waited).any() else DEFAULT_SYNC_NS
    typ_post = int(np.median((e - we)[waited])) if waited.any() else DEFAULT_SYNC_NS
    g.base[sy] = np.where(waited, np.minimum(typ_base, dur), dur)
    g.post[sy] = np.where(waited, e - we, np.minimum(typ_post, e - we))
    g.typical.update(sync_ns=typ_base, post_ns=typ_post)


# --------------------------------------------------------------------------- GPU side


def stream_prev(g: Graph, nodes: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """For GPU ``nodes`` (ascending ids) on ``lane``: the previous node of the same lane."""
    o = np.lexsort((nodes, lane))
    prev = np.full(len(nodes), -1, np.int64)
    same = np.r_[False, lane[o][1:] == lane[o][:-1]]
    p = np.r_[-1, nodes[o][:-1]]
    prev[o] = np.where(same, p, -1)
    return prev


def resource_prev(g: Graph, nodes: np.ndarray, fills: np.ndarray) -> np.ndarray:
    """Previous user of the same exclusive resource: a filling kernel of the device, or a copy
    engine (device, direction)."""
    # resource code: 3 x device + (0 SMs, 1 HtoD engine, 2 DtoH engine); -1 none
    res = np.full(len(nodes), -1, np.int64)
    dev = g.device[nodes]
    res[fills & (g.gkind[nodes] == KERNEL)] = 0
    copy = g.gkind[nodes] == COPY
    dirs = g.copy_dir[nodes]
    res[copy & (dirs == "HtoD")] = 1
    res[copy & (dirs == "DtoH")] = 2
    prev = np.full(len(nodes), -1, np.int64)
    has = np.flatnonzero(res >= 0)
    if not len(has):
        return prev
    prev[has] = stream_prev(g, nodes[has], 3 * (dev[has] + 1) + res[has])
    return prev


def gpu_delays(g: Graph) -> None:
    """Each GPU op's constraint delays, and inferred cross-stream dependencies."""
    ops = np.flatnonzero(g.ntype == GPU)
    if not len(ops):
        g.typical.update(launch_ns=DEFAULT_LAUNCH_NS, queue_ns=DEFAULT_QUEUE_NS)
        return
    S = g.start[ops]
    lch = g.launch[ops]
    t_l = np.where(lch >= 0, g.start[np.maximum(lch, 0)], np.iinfo(np.int64).min)
    sp = stream_prev(g, ops, g.lane[ops])
    t_s = np.where(sp >= 0, g.end[np.maximum(sp, 0)], np.iinfo(np.int64).min)
    rp = resource_prev(g, ops, g.fills[ops])
    t_r = np.where(rp >= 0, g.end[np.maximum(rp, 0)], np.iinfo(np.int64).min)
    has_l, has_s = lch >= 0, sp >= 0
    idle = has_l & (~has_s | (t_s < t_l))
    typ_l = int(np.median(S[idle] - t_l[idle])) if idle.any() else DEFAULT_LAUNCH_NS
    queued = has_s & (~has_l | (t_s >= t_l)) & (S - t_s >= 0)
    typ_q = int(np.median(S[queued] - t_s[queued])) if queued.any() else DEFAULT_QUEUE_NS
    typ_l, typ_q = max(typ_l, 0), max(typ_q, 0)
    g.typical.update(launch_ns=typ_l, queue_ns=typ_q)
    big = np.iinfo(np.int64).min // 4
    d_l = np.where(lch >= 0, np.minimum(typ_l, S - t_l), 0)
    d_s = np.where(sp >= 0, np.minimum(typ_q, S - t_s), 0)
    d_r = np.where(rp >= 0, np.minimum(typ_q, S - t_r), 0)
    reach = np.max(
        np.stack([np.where(lch >= 0, t_l + d_l, big), np.where(sp >= 0, t_s + d_s, big),
                  np.where(rp >= 0, t_r + d_r, big)]),
        axis=0,
    )
    latest = np.max(np.stack([np.where(lch >= 0, t_l, big), np.where(sp >= 0, t_s, big),
                              np.where(rp >= 0, t_r, big)]), axis=0)
    rest = S - reach
    short = (rest > 0) & (reach > big)
    # unexplained waits: look for the op of another stream of the device that ended last
    unexplained = np.flatnonzero(short & (rest > UNEXPLAINED_NS))
    if len(unexplained):
        _infer_deps(g, ops, unexplained, latest)
    has_dep = g.dep[ops] >= 0
    # the latest constraint takes what is left, so that the unchanged replay is exact
    fix = short & ~has_dep
    which = np.argmax(np.stack([np.where(lch >= 0, t_l, big), np.where(sp >= 0, t_s, big),
                                np.where(rp >= 0, t_r, big)]), axis=0)
    d_l = np.where(fix & (which == 0), S - t_l, d_l)
    d_s = np.where(fix & (which == 1), S - t_s, d_s)
    d_r = np.where(fix & (which == 2), S - t_r, d_r)
    g.d_launch[ops], g.d_stream[ops], g.d_res[ops] = d_l, d_s, d_r


def _infer_deps(g: Graph, ops: np.ndarray, rows: np.ndarray, latest: np.ndarray) -> None:
    """The op an unexplained wait waited for: of another stream of its device, the one that
    ended last before it started (after its other constraints); failing that, of another
    device (a peer copy or a result another GPU produced)."""
    by_end = ops[np.argsort(g.end[ops], kind="stable")]
    ends = g.end[by_end]
    for r in rows.tolist():
        i = int(ops[r])
        k0 = int(np.searchsorted(ends, g.start[i], side="right")) - 1
        for same in (True, False):
            k = k0
            while k >= 0 and ends[k] > latest[r]:
                j = int(by_end[k])
                if g.lane[j] != g.lane[i] and (g.device[j] == g.device[i]) == same and j < i:
                    g.dep[i] = j
                    g.d_dep[i] = g.start[i] - g.end[j]
                    break
                k -= 1
            if g.dep[i] >= 0:
                break
