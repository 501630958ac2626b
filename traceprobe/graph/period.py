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
    host = int(rp.start[e]) - int(rp.start[s])
    ops = np.flatnonzero(g.ntype == GPU)
    if not len(ops):
        return host, 0
    lnode = g.launch[ops]  # -1: launched before the trace's calls (a warm-up's backlog)
    mine = ops[(lnode > s) & (lnode < e)]  # launched between the markers (node order)
    if not len(mine):
        return host, 0
    before = ops[lnode < s]
    prev = max(int(rp.start[s]), int(rp.end[before].max()) if len(before) else 0)
    return host, max(int(rp.end[mine].max()) - prev, 0)


def gpu_end_node(g: Graph, rp: Replay, hi: int, default: int) -> int:
    """The GPU op running at ``hi`` (started before it, ending last), else the one that ended
    last before it; ``default`` when no GPU op started before ``hi``."""
    ops = np.flatnonzero((g.ntype == GPU) & (rp.start < hi))
    if not len(ops):
        return default
    return int(ops[np.argmax(rp.end[ops])])


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
