"""The critical path of a replayed window: walk back from the window's end along what
set each time, and say what lies on it.

From the window's last node, each step back follows the constraint that *bound* the
node (the one whose time plus delay was latest; a wait that ended on a GPU op follows
that op). Each node contributes the part of the path it covers, each binding delay the
time between its predecessor and the node, so the pieces tile the window exactly:
``length == window end - window start``. Categories of the breakdown:

==================  ============================================================
``kernel``          a kernel (not a collective)
``communication``   an NCCL/RCCL kernel
``copy``            a memcpy or memset
``sync_wait``       a host wait (a sync call, a blocking copy, a launch that waited for
                    a launch-queue slot), from the GPU op it waited for to its return
``dataloader``      host time inside a DataLoader range (the host account's class)
``optimizer``       host time inside an ``Optimizer.*`` range
``sync``            a sync call's own time (``cudaDeviceSynchronize``, ``.item()``...)
``runtime``         a CUDA runtime/driver call; a launch's latency (call start -> its
                    op's start); a GPU op's start latency after the op it waited for,
                    when under ``NEAR_NS`` (10 µs: a queue or graph-node gap)
``cpu_op``          a CPU op's self time
``region``          a user ``record_function`` range with no event inside
``python``          "Python (untraced)": the thread had no event
``idle``            a longer GPU gap (an op that waited on its stream, a resource or another
                    stream longer than ``NEAR_NS``) while no thread of the process had an
                    event (else the gap is the launching thread's host account, or where it
                    had none the whole process's)
==================  ============================================================

Every host piece (a call, the time between two calls of a thread, a hand-off between
threads) is cut by the host account of its thread (:func:`traceprobe.metrics.regions.account`;
a hand-off piece by its predecessor's thread, its successor's where the predecessor had no
event), so the host categories are those of the idle causes and the step breakdown.
``bound_by`` is ``"GPU"`` when the GPU categories (kernel, communication, copy,
sync_wait) hold the most time of any group, else the largest other category.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from traceprobe.graph.model import GPU, HOST, KERNEL, Graph
from traceprobe.graph.replay import C_HAND, C_HOST, C_LAUNCH, C_STREAM, END, Replay
from traceprobe.metrics.regions import UNTRACED

CATEGORIES = ("kernel", "communication", "copy", "sync_wait", "dataloader", "optimizer",
              "sync", "runtime", "cpu_op", "region", "python", "idle")
GPU_CATEGORIES = ("kernel", "communication", "copy", "sync_wait")
HOST_CATEGORIES = ("dataloader", "optimizer", "sync", "runtime", "cpu_op", "region", "python")
HOST_PIECE, HAND_PIECE, GAP_PIECE = "@host", "@hand", "@gap"  # resolved by the host account
NEAR_NS = 10_000  # a GPU gap this short before an op keeps the path on the GPU

Piece = tuple[int, int, str, str]  # start ns, end ns, kind, name
# a piece of the path as walked: (start, end, kind, name, parts). ``parts`` is empty for a
# piece of one category; a host piece cut by the account keeps its time per category there
# (exact, for the breakdown), its kind and name those of the category holding the most
# (one segment per host piece of the walk, not one per event: a report stays small)
Walked = tuple[int, int, str, str, tuple[tuple[str, int], ...]]


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
        self.lane = _view(g.lane)
        self.kind = _kinds(g)
        self.name = g.name.tolist()
        self.accounts = g.accounts
        self.dur = _view(rp.end - rp.start)
        # each GPU op's stream predecessor in this replay (-1 none), and its launching call
        prev = np.full(len(g), -1, np.int64)
        on = rp.ctype == C_STREAM
        prev[rp.succ[on]] = rp.pred[on]
        self.stream_prev = _view(prev)
        self.launcher = _view(g.launch)
        # each step's path, by its markers, once walked: the window's path (its steps end to
        # end) and each step's own read the same pieces
        self.steps: dict[tuple[int, int], list[Walked]] = {}
        # per step (markers): (host span, GPU span, the GPU op at its end marker), made for
        # every step at once on first use (:mod:`.period`)
        self.facts: dict[tuple[int, int], tuple[int, int, int]] | None = None


def _view(a: np.ndarray) -> memoryview:
    """``a`` as a memoryview whose items are Python ints (or bools)."""
    a = np.ascontiguousarray(a if a.dtype == bool else a.astype(np.int64, copy=False))
    return a.data


def walker(g: Graph, rp: Replay) -> _Lists:
    """What :func:`walk` reads; make it once per replay when walking many windows."""
    return _Lists(g, rp)


def walk(g: Graph, rp: Replay, end_node: int, end_time: int, lo: int,
         lists: _Lists | None = None, gpu_first: bool = False) -> list[Walked]:
    """Pieces of the critical path ending at ``end_time`` (at or after ``end_node``'s end),
    back to ``lo``, in time order. At a GPU op that waited for its launch the path stays on
    the GPU (through the stream's previous op, the wait a host piece of the launching thread)
    when the wait was shorter than the op or :data:`NEAR_NS`, and always with ``gpu_first``
    (a step whose period the GPU sets: the GPU is what bounds it): :func:`trace_back`, its
    host pieces cut by the host account (:func:`resolve`) then :func:`merge`."""
    L = lists or _Lists(g, rp)
    return merge(resolve(trace_back(g, rp, end_node, end_time, lo, L, gpu_first), L.accounts))


def trace_back(g: Graph, rp: Replay, end_node: int, end_time: int, lo: int, L: _Lists,
               gpu_first: bool = False) -> list[Piece]:
    """The walk of :func:`walk` before :func:`resolve`: host, hand-off and GPU-gap pieces
    still to be cut by the host account (many walks' at once, when walking many steps)."""
    out: list[Piece] = []
    c = int(end_time)
    i = int(end_node)
    if c > L.E[i]:
        out.append((max(L.E[i], lo), c, *_host_or_idle(L, i, "after the last call")))
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
            out.append((max(s, lo), c, *_host_or_idle(L, i, str(L.name[i]), L.kind[i])))
            c = s
        k = L.bind[i]
        if k >= 0 and L.ctype[k] == C_LAUNCH and L.stream_prev[i] >= 0:
            # the GPU waited for this op's launch; when that wait was shorter than the op (the
            # GPU was mostly busy) the path stays on the GPU through the stream's previous op
            sp = L.stream_prev[i]
            t = L.E[sp]
            if gpu_first or c - t < max(L.dur[i], NEAR_NS):
                if c > t:
                    out.append((max(t, lo), c, HOST_PIECE, str(L.lane[L.launcher[i]])))
                    c = max(t, lo)
                i = sp
                continue
        if k < 0:
            if c > lo:
                out.append((lo, c, *_host_or_idle(L, i, f"-1 before {L.name[i]}", GAP_PIECE)))
            c = lo
            break
        q = L.pred[k]
        t = L.E[q] if L.ref[k] == END else L.S[q]
        if c > t:
            ct = L.ctype[k]
            if ct == C_HOST:
                kind, label = HOST_PIECE, str(L.lane[i])
            elif ct == C_HAND:
                kind, label = HAND_PIECE, f"{L.lane[q]} {L.lane[i]}"
            elif ct == C_LAUNCH:
                kind, label = "runtime", f"launch latency of {L.name[i]}"
            elif c - t < NEAR_NS:  # the GPU's own latency to start the op after its wait
                kind, label = "runtime", f"queue gap before {L.name[i]}"
            else:  # the host's account of the thread that launched it (-1: the process's)
                who = L.lane[L.launcher[i]] if L.launcher[i] >= 0 else -1
                kind, label = GAP_PIECE, f"{who} GPU gap before {L.name[i]}"
            out.append((max(t, lo), c, kind, label))
            c = t
        i = q
    out.reverse()
    return out


def _host_or_idle(L: _Lists, i: int, label: str, kind: str = "idle") -> tuple[str, str]:
    """A piece of node ``i`` (or before or after it): a host node's goes to its thread's
    account; a GPU node's keeps ``kind``."""
    if L.gpu[i]:
        return kind, label
    return HOST_PIECE, str(L.lane[i])


def resolve(pieces: list[Piece], accounts: dict[int, Any]) -> list[Walked]:
    """Host and hand-off pieces cut by the host account (module docstring), each as one
    walked piece with its time per category."""
    out: list[Walked] = []
    host: dict[int, list[int]] = {}
    for s, e, k, n in pieces:
        if k == HOST_PIECE:  # all of a thread's at once, below
            host.setdefault(int(n), []).append(len(out))
            out.append((s, e, k, n, ()))
            continue
        if k == GAP_PIECE:  # a long GPU wait: the launching thread's doing, else any
            lane, _, label = n.partition(" ")  # thread's of the process, else idle
            fine = []
            for ps, pe, pk, pn in _cut(accounts.get(int(lane)), s, e):
                if pk != "python":
                    fine.append((ps, pe, pk, pn))
                    continue
                fine += [(qs, qe, "idle", label) if qk == "python" else (qs, qe, qk, qn)
                         for qs, qe, qk, qn in _cut(accounts.get(-1), ps, pe)]
        elif k == HAND_PIECE:
            a, b = (int(x) for x in n.split())
            fine = []
            for ps, pe, pk, pn in _cut(accounts.get(a), s, e):
                fine += _cut(accounts.get(b), ps, pe) if pk == "python" else [(ps, pe, pk, pn)]
        else:
            out.append((s, e, k, n, ()))
            continue
        out.append(_coarse(s, e, fine))
    for thread, at in host.items():
        acc = accounts.get(thread)
        got = acc.summaries(np.array([out[j][0] for j in at], np.int64),
                            np.array([out[j][1] for j in at], np.int64),
                            CATEGORIES) if acc is not None else [None] * len(at)
        for j, brief in zip(at, got, strict=True):
            s, e = out[j][0], out[j][1]
            out[j] = (s, e, *brief) if brief is not None else _coarse(s, e, _cut(acc, s, e))
    return out


def _coarse(s: int, e: int, fine: list[Piece]) -> Walked:
    """One walked piece for ``[s, e)`` cut into ``fine``: its time per category, and the kind
    and name of the category holding the most (its longest event's name)."""
    if not fine:
        return (s, e, "python", UNTRACED, ())
    if len(fine) == 1:
        return (s, e, fine[0][2], fine[0][3], ())
    ns: dict[str, int] = {}
    best: dict[str, tuple[int, str]] = {}
    for a, b, k, n in fine:
        ns[k] = ns.get(k, 0) + b - a
        if b - a > best.get(k, (-1, ""))[0]:
            best[k] = (b - a, n)
    top = _top(ns)
    if len(ns) == 1:
        return (s, e, top, best[top][1], ())
    return (s, e, top, best[top][1], _ordered(ns))


_RANK = {c: i for i, c in enumerate(CATEGORIES)}
_HOSTS = frozenset(HOST_CATEGORIES)


def _top(ns: dict[str, int]) -> str:
    """The category holding the most time of ``ns`` (positive total); ties: the first in
    :data:`CATEGORIES`."""
    if len(ns) == 1:
        return next(iter(ns))
    return min(ns, key=lambda c: (-ns[c], _RANK[c]))


def _ordered(ns: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """``ns``'s items in :data:`CATEGORIES` order."""
    return tuple(sorted(ns.items(), key=lambda kv: _RANK[kv[0]]))


def parts(p: Walked) -> tuple[tuple[str, int], ...]:
    """A walked piece's time per category."""
    return p[4] or ((p[2], p[1] - p[0]),)


def clip(p: Walked, lo: int, hi: int) -> Walked:
    """``p`` cut to ``[lo, hi)``; its parts in proportion (the rounding to the largest)."""
    s, e = max(p[0], lo), min(p[1], hi)
    if not p[4] or (s, e) == (p[0], p[1]):
        return (s, e, p[2], p[3], p[4])
    whole = p[1] - p[0]
    got = [(c, (v * (e - s)) // whole) for c, v in p[4]]
    rest = (e - s) - sum(v for _, v in got)
    got = [(c, v + rest if c == p[2] else v) for c, v in got]
    return (s, e, p[2], p[3], tuple(got))


def _cut(acc: Any, s: int, e: int) -> list[Piece]:
    if e <= s:
        return []
    if acc is None:
        return [(s, e, "python", UNTRACED)]
    return list(acc.pieces(s, e))


def merge(pieces: list[Walked]) -> list[Walked]:
    """Adjacent pieces of one kind and name as one; adjacent host pieces of one kind, or of
    which one is shorter than ``NEAR_NS``, as one, of the kind holding the most (their parts
    summed, so the breakdown stays exact); empty ones dropped.

    A left fold: the piece being grown is held as loose values (its parts as a dict, None
    for one category) and made a tuple only when the next piece does not join it."""
    out: list[Walked] = []
    hosts = _HOSTS
    qs = qe = -1
    qk = qn = ""
    qns: dict[str, int] | None = None
    for s, e, k, n, pp in pieces:
        if e <= s:
            continue
        if qe == s and qs >= 0:
            if k == qk and n == qn and qns is None and not pp:  # the commonest
                qe = e
                continue
            host = qk in hosts and k in hosts
            if (qk == k and (qn == n or host)) or (host and min(qe - qs, e - s) < NEAR_NS):
                if qns is None and not pp and qk == k:  # one category: no parts to sum
                    if qn != n and qe - qs < e - s:
                        qn = n
                    qe = e
                    continue
                ns = qns if qns is not None else {qk: qe - qs}
                for c, v in pp or ((k, e - s),):
                    ns[c] = ns.get(c, 0) + v
                if len(ns) == 1 and qn == n:
                    qe, qk, qns = e, k, None
                    continue
                top = _top(ns)
                if qe - qs >= e - s:
                    qn = qn if qk == top else n if k == top else qn
                else:
                    qn = n if k == top else qn if qk == top else n
                qe, qk, qns = e, top, ns if len(ns) > 1 else None
                continue
        if qs >= 0:
            out.append((qs, qe, qk, qn, _ordered(qns) if qns else ()))
        qs, qe, qk, qn, qns = s, e, k, n, dict(pp) if pp else None
    if qs >= 0:
        out.append((qs, qe, qk, qn, _ordered(qns) if qns else ()))
    return out

def summary(pieces: list[Walked], lo: int, hi: int, shift: int = 0) -> dict[str, Any]:
    """The report's ``critical_path`` object. ``shift`` moves replayed times onto the
    measured clock (0 for an unchanged replay, which reproduces it)."""
    br = dict.fromkeys(CATEGORIES, 0)
    for p in pieces:
        for k, v in parts(p):
            br[k] += v
    top = _bound_by(br) if hi > lo else None
    return {
        "length_us": (hi - lo) / 1000,
        "bound_by": top,
        "breakdown": {k: v / 1000 for k, v in br.items()},
        "segments": [
            {"start_us": (s + shift) / 1000, "end_us": (e + shift) / 1000, "kind": k, "name": n}
            for s, e, k, n, _ in pieces
        ],
    }


def _bound_by(br: dict[str, int]) -> str:
    """"GPU" when the GPU categories together hold more than any other category, else
    the largest category (ties: the first in CATEGORIES)."""
    gpu = sum(br[k] for k in GPU_CATEGORIES)
    rest = [k for k in CATEGORIES if k not in GPU_CATEGORIES]
    top = max(rest, key=lambda k: br[k])
    return "GPU" if gpu >= br[top] and gpu > 0 else top


def window_end(g: Graph, rp: Replay) -> tuple[int, int]:
    """(node, time) at which the whole trace's replay ends (trailing host time kept)."""
    i = int(np.argmax(rp.end))
    trailing = max(g.span_end - int(g.end.max()), 0)
    return i, int(rp.end[i]) + trailing
