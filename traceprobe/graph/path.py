"""The critical path of a replayed window: walk back from the window's end along what
set each time, and say what lies on it.

From the window's last node, each step back follows the constraint that *bound* the
node (the one whose time plus delay was latest; a wait that ended on a GPU op follows
that op). Each node contributes the part of the path it covers, each binding delay the
time between its predecessor and the node, so the pieces tile the window exactly:
``length == window end - window start``. Categories of the breakdown:

==============  ================================================================
``cpu_op``      host time between two calls covered by a CPU op
``dataloader``  the same, inside an op whose name names a DataLoader
``runtime``     a CUDA runtime/driver call, and a launch's latency (call start ->
                its op's start)
``kernel``      a kernel (not a collective)
``communication`` an NCCL/RCCL kernel
``copy``        a memcpy or memset
``sync_wait``   a host wait, from the GPU op it waited for to its return
``idle``        host time outside every CPU op; GPU queue gaps between ops
==============  ================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from traceprobe.graph.model import GAP_KINDS, GPU, HOST, KERNEL, Graph
from traceprobe.graph.replay import C_HOST, C_LAUNCH, END, Replay

CATEGORIES = ("cpu_op", "runtime", "kernel", "copy", "communication", "sync_wait",
              "dataloader", "idle")

Piece = tuple[int, int, str, str]  # start ns, end ns, kind, name


def _node_kind(g: Graph, i: int) -> str:
    if g.ntype[i] == GPU:
        if g.gkind[i] == KERNEL:
            return "communication" if g.comm[i] else "kernel"
        return "copy"
    return "runtime" if g.ntype[i] == HOST else "idle"


def walk(g: Graph, rp: Replay, end_node: int, end_time: int, lo: int) -> list[Piece]:
    """Pieces of the critical path ending at ``end_time`` (at or after ``end_node``'s end),
    back to ``lo``, in time order."""
    out: list[Piece] = []
    c = end_time
    i = end_node
    if c > rp.end[i]:
        out.append((int(max(rp.end[i], lo)), int(c), "idle", "after the last call"))
        c = int(rp.end[i])
    guard = len(g) * 3 + 10
    while c > lo and i >= 0 and guard:
        guard -= 1
        nm = str(g.name[i])
        k = int(rp.ebind[i])
        if k >= 0 and c >= rp.end[i]:  # a wait that ended on a GPU op
            w = int(rp.pred[k])
            t = int(rp.end[w])
            if c > t:
                out.append((max(t, lo), c, "sync_wait", nm))
            c = min(c, t)
            i = w
            continue
        s = int(rp.start[i])
        if c > s:
            out.append((max(s, lo), c, _node_kind(g, i), nm))
            c = s
        k = int(rp.bind[i])
        if k < 0:
            if c > lo:
                kind = GAP_KINDS[g.gap_kind[i]] if g.ntype[i] != GPU else "idle"
                out.append((lo, c, kind, f"before {nm}"))
            c = lo
            break
        q = int(rp.pred[k])
        t = int(rp.end[q] if rp.ref[k] == END else rp.start[q])
        if c > t:
            ct = int(rp.ctype[k])
            if ct == C_HOST:
                kind, label = GAP_KINDS[g.gap_kind[i]], f"host before {nm}"
            elif ct == C_LAUNCH:
                kind, label = "runtime", f"launch latency of {nm}"
            else:
                kind, label = "idle", f"GPU gap before {nm}"
            out.append((max(t, lo), c, kind, label))
            c = t
        i = q
    out.reverse()
    return _merge(out)


def _merge(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if p[1] <= p[0]:
            continue
        if out and out[-1][2] == p[2] and out[-1][3] == p[3] and out[-1][1] == p[0]:
            out[-1] = (out[-1][0], p[1], p[2], p[3])
        else:
            out.append(p)
    return out


def summary(pieces: list[Piece], lo: int, hi: int, shift: int = 0) -> dict[str, Any]:
    """The report's ``critical_path`` object. ``shift`` moves replayed times onto the
    measured clock (0 for an unchanged replay, which reproduces it)."""
    br = dict.fromkeys(CATEGORIES, 0)
    for s, e, k, _ in pieces:
        br[k] += e - s
    top = max(CATEGORIES, key=lambda k: br[k]) if hi > lo else None
    return {
        "length_us": (hi - lo) / 1000,
        "bound_by": top,
        "breakdown": {k: v / 1000 for k, v in br.items()},
        "segments": [
            {"start_us": (s + shift) / 1000, "end_us": (e + shift) / 1000, "kind": k, "name": n}
            for s, e, k, n in pieces
        ],
    }


def window_end(g: Graph, rp: Replay) -> tuple[int, int]:
    """(node, time) at which the whole trace's replay ends (trailing host time kept)."""
    i = int(np.argmax(rp.end))
    trailing = max(g.span_end - int(g.end.max()), 0)
    return i, int(rp.end[i]) + trailing
