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


def _kinds(g: Graph) -> list[str]:
    """Each node's category on the path."""
    out = np.full(len(g), "idle", object)
    out[g.ntype == HOST] = "runtime"
    gpu = g.ntype == GPU
    out[gpu] = "copy"
    k = gpu & (g.gkind == KERNEL)
    out[k] = np.where(g.comm[k], "communication", "kernel")
    return out.tolist()


class _Lists:
    """The arrays the walk reads, as memoryviews: indexing one gives a plain int, fast,
    where a numpy scalar is slow; and, unlike ``tolist()``, nothing is made for the many
    nodes a walk never visits (11 lists of a 200k-node graph held ~80 MB of ints)."""

    def __init__(self, g: Graph, rp: Replay) -> None:
        self.S, self.E = _view(rp.start), _view(rp.end)
        self.bind, self.ebind = _view(rp.bind), _view(rp.ebind)
        self.pred, self.ref, self.ctype = _view(rp.pred), _view(rp.ref), _view(rp.ctype)
        self.gpu = _view(g.ntype == GPU)
        self.gap = [GAP_KINDS[k] for k in g.gap_kind.tolist()]
        self.kind = _kinds(g)
        self.name = g.name.tolist()


def _view(a: np.ndarray) -> memoryview:
    """``a`` as a memoryview whose items are Python ints (or bools)."""
    a = np.ascontiguousarray(a if a.dtype == bool else a.astype(np.int64, copy=False))
    return a.data


def walker(g: Graph, rp: Replay) -> _Lists:
    """What :func:`walk` reads; make it once per replay when walking many windows."""
    return _Lists(g, rp)


def walk(g: Graph, rp: Replay, end_node: int, end_time: int, lo: int,
         lists: _Lists | None = None) -> list[Piece]:
    """Pieces of the critical path ending at ``end_time`` (at or after ``end_node``'s end),
    back to ``lo``, in time order."""
    L = lists or _Lists(g, rp)
    out: list[Piece] = []
    c = int(end_time)
    i = int(end_node)
    if c > L.E[i]:
        out.append((max(L.E[i], lo), c, "idle", "after the last call"))
        c = L.E[i]
    guard = len(g) * 3 + 10
    while c > lo and i >= 0 and guard:
        guard -= 1
        k = L.ebind[i]
        if k >= 0 and c >= L.E[i]:  # a wait that ended on a GPU op
            w = L.pred[k]
            t = L.E[w]
            if c > t:
                out.append((max(t, lo), c, "sync_wait", str(L.name[i])))
            c = min(c, t)
            i = w
            continue
        s = L.S[i]
        if c > s:
            out.append((max(s, lo), c, L.kind[i], str(L.name[i])))
            c = s
        k = L.bind[i]
        if k < 0:
            if c > lo:
                kind = "idle" if L.gpu[i] else L.gap[i]
                out.append((lo, c, kind, f"before {L.name[i]}"))
            c = lo
            break
        q = L.pred[k]
        t = L.E[q] if L.ref[k] == END else L.S[q]
        if c > t:
            ct = L.ctype[k]
            if ct == C_HOST:
                kind, label = L.gap[i], f"host before {L.name[i]}"
            elif ct == C_LAUNCH:
                kind, label = "runtime", f"launch latency of {L.name[i]}"
            else:
                kind, label = "idle", f"GPU gap before {L.name[i]}"
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
