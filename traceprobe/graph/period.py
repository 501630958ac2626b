"""A step's *period*: what one more step of the loop costs, host or GPU, whichever is longer.

A step's markers are host times: ``ProfilerStep#N``'s range ends when the host is done with
the step. When the loop never waits for the GPU (no ``.item()``, no synchronize), the host
runs ahead of a busy GPU until the launch queue is full, and in the few steps a profile
records the GPU may still be working on step N when the host's step N+1 has ended. A
training loop's time per step, measured over many steps, is then the GPU's, not the host's.

So the period of step N is the longer of

* its host span, end marker − start marker, and
* its GPU span: the latest end of the GPU ops launched inside the step (launch call between
  its markers) − the latest end of those launched before it (or the step's start, if later;
  an op whose launch call the trace lacks was launched before the first step).

The what-if compares periods (measured from the unchanged replay, predicted from the
scenario's), so a scenario that shortens only the GPU's work moves a step the GPU bounds.
When the host bounds every step (a sync at its end), the period is the host span.
"""

from __future__ import annotations

import numpy as np

from traceprobe.graph.model import GPU, Graph
from traceprobe.graph.replay import Replay


def period(g: Graph, rp: Replay, s: int, e: int) -> tuple[int, int]:
    """(host span, GPU span) in ns of the step with start marker ``s`` and end marker ``e``
    (node ids), on the replay ``rp``."""
    return periods(g, rp, [(s, e)])[0]


def periods(g: Graph, rp: Replay, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """:func:`period` of every step ``(s, e)`` of ``rows`` at once: the GPU ops sorted by
    their launch node once, each step's ops a range of them (one sort, where a step at a
    time scanned every node: quadratic in the steps)."""
    st, en = rp.start, rp.end
    host = [int(st[e]) - int(st[s]) for s, e in rows]
    ops = np.flatnonzero(g.ntype == GPU)
    if not len(ops) or not rows:
        return [(h, 0) for h in host]
    lnode = g.launch[ops]  # -1: launched before the trace's calls (a warm-up's backlog)
    order = np.argsort(lnode, kind="stable")
    lsorted, ends = lnode[order], en[ops[order]].astype(np.int64)
    upto = np.maximum.accumulate(ends)  # the latest end among the first k ops by launch node
    s_arr = np.array([s for s, _ in rows], np.int64)
    e_arr = np.array([e for _, e in rows], np.int64)
    a = np.searchsorted(lsorted, s_arr, side="right")  # launched after the start marker
    b = np.searchsorted(lsorted, e_arr, side="left")  # ... and before the end marker
    before = np.searchsorted(lsorted, s_arr, side="left")  # launched before the start marker
    out = []
    for k, (s, _) in enumerate(rows):
        ak, bk = int(a[k]), int(b[k])
        if bk <= ak:
            out.append((host[k], 0))
            continue
        latest = int(ends[ak:bk].max())
        prev = max(int(st[s]), int(upto[before[k] - 1]) if before[k] else 0)
        out.append((host[k], max(latest - prev, 0)))
    return out


def gpu_end_node(g: Graph, rp: Replay, hi: int, default: int) -> int:
    """The GPU op running at ``hi`` (started before it, ending last), else the one that ended
    last before it; ``default`` when no GPU op started before ``hi``."""
    return gpu_end_nodes(g, rp, [hi], [default])[0]


def gpu_end_nodes(g: Graph, rp: Replay, his: list[int], defaults: list[int]) -> list[int]:
    """:func:`gpu_end_node` at each of ``his`` at once (ties: the lowest node id, as
    ``argmax`` over the ops in node order): the ops ranked by (end, node) once, the best rank
    among those started before each time a running minimum."""
    ops = np.flatnonzero(g.ntype == GPU)
    if not len(ops):
        return list(defaults)
    ends = rp.end[ops].astype(np.int64)
    rank = np.empty(len(ops), np.int64)
    rank[np.lexsort((ops, -ends))] = np.arange(len(ops))  # 0: the latest end, lowest node
    by_start = np.argsort(rp.start[ops], kind="stable")
    best = np.minimum.accumulate(rank[by_start])  # the best rank among the first k started
    node_of_rank = np.empty(len(ops), np.int64)
    node_of_rank[rank] = ops
    k = np.searchsorted(rp.start[ops][by_start], np.asarray(his, np.int64), side="left")
    return [int(node_of_rank[best[j - 1]]) if j else d
            for j, d in zip(k.tolist(), defaults, strict=True)]


UNMODELLED_SHARE = 0.2  # collective time on a step's path beyond this: the model does not hold


def unmodelled(path: dict, gpu_bound: bool) -> str:
    """Why the replay's model does not hold for a step, or "": more than
    :data:`UNMODELLED_SHARE` of its path is collective (NCCL/RCCL) kernel time. A
    collective lasts until every rank has joined it, so its measured duration holds the
    other ranks' lateness, which a replay of one rank keeps fixed: a scenario that speeds
    this rank up cannot say what the collective would then wait. (``gpu_bound`` is kept
    for the caller's note.)"""
    length = path.get("length_us") or 0.0
    comm = path.get("breakdown", {}).get("communication", 0.0)
    if not length or comm <= UNMODELLED_SHARE * length:
        return ""
    return (f"{comm / length:.0%} of the step's path is collectives, which wait for the other "
            "ranks: a one-rank replay keeps that wait fixed")
