"""The dependency graph of one trace (one rank), as numpy arrays.

Nodes, in measured start order:

* **host calls** — top-level CUDA runtime/driver calls of each host thread (a call
  nested in another call of the same thread belongs to the outer one). A thread runs
  one call at a time: call k starts ``gap_k`` after call k-1 ends, ``gap_k`` being the
  measured CPU time between them (classified ``cpu_op`` when a CPU op covers the gap's
  midpoint, ``dataloader`` when that op's name names a DataLoader, else ``idle``).
* **markers** — zero-length nodes on the step thread at each ``ProfilerStep#N``'s start
  and end, so that a replayed step is ``end marker - start marker``.
* **GPU ops** — kernels, copies, memsets, each with the constraints it started after:

  ``launch``   the runtime call with its correlation id (from the call's *start*)
  ``stream``   the previous op of its (device, stream)
  ``resource`` the previous GPU-filling kernel of its device (:mod:`.resources`), or the
               previous copy of its direction on its device (one copy engine each way)
  ``dep``      an *inferred* cross-stream dependency: when an op started more than
               ``UNEXPLAINED_NS`` after every constraint above allows, the op of another
               stream of its device that ended last before it started is taken as what it
               waited for (a ``cudaStreamWaitEvent``; the trace's runtime calls carry no
               stream or event ids unless ``enable_cuda_sync_events`` was on, and this
               graph does not read those); failing one on its device, the op of another
               device that ended last before it (a peer copy, another GPU's result).

* **host waits** — a runtime call that blocks until GPU work is done: names with
  ``Synchronize`` and blocking ``cudaMemcpy``; also any launch of a copy that returned
  only after its copy ended (a blocking copy). ``cudaDeviceSynchronize`` waits for every
  op launched before it; another wait for the op launched before it that ended last
  before the call returned (its own copy, for a blocking copy). A launch that blocked on
  a full launch queue waits for the op whose completion freed its slot
  (:func:`.delays.queue_waits`).
* **hand-offs** between host threads (autograd's backward thread): :mod:`.threads`.

Each constraint carries the measured delay from its time to the op's start, capped at the
typical value (median over the ops it bound) so that a constraint that did not bind cannot
become binding in a replay of the unchanged trace; the binding constraint keeps its own
measured delay. A replay with no change therefore reproduces every measured time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.graph.resources import fills_gpu
from traceprobe.timeline import Timeline

HOST, MARK, GPU = 0, 1, 2
KERNEL, COPY, MEMSET = 0, 1, 2
NO_SYNC, SYNC_ONE, SYNC_DEVICE = 0, 1, 2
GAP_IDLE, GAP_CPU, GAP_LOADER = 0, 1, 2
GAP_KINDS = ("idle", "cpu_op", "dataloader")

CALL_KINDS = ("cuda_runtime", "cuda_driver")
QUEUE_FULL = 768  # ops in flight: a launch queue near full (CUDA holds 1024 entries; the trace
# counts kernels, copies and memsets, not the event records that share the queue)
UNEXPLAINED_NS = 10_000  # an op starting >10 µs after all its known constraints waited on something
TOLERANCE_NS = 1_000
DEFAULT_LAUNCH_NS = 5_000
DEFAULT_QUEUE_NS = 1_000
DEFAULT_SYNC_NS = 2_000
SYNC_NAME = re.compile(r"Synchronize|^cudaMemcpy$|^cudaMemcpy2D$|^cuMemcpyDtoH|^cuMemcpyHtoD$")
_LOADER = re.compile(r"DataLoader", re.IGNORECASE)


@dataclass
class Graph:
    """Nodes as parallel arrays (index = node id); see the module docstring."""

    ntype: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    lane: np.ndarray  # host thread lane or (device, stream) lane
    lanes: list[tuple[Any, ...]]  # ("host", pid, tid) | ("gpu", device, stream)
    # host side
    prev: np.ndarray  # previous node of the same host lane, -1 first
    gap: np.ndarray  # measured time from prev's end (or the trace start) to this start
    gap_kind: np.ndarray
    launch_gap: np.ndarray  # the gap lies inside a CPU op that launches GPU work
    launches: np.ndarray  # host call that launched at least one GPU op
    sync: np.ndarray
    wait: np.ndarray  # SYNC_ONE: the op waited for
    base: np.ndarray  # a wait's own duration when it does not wait
    post: np.ndarray  # from the waited op's end to the call's return
    queued: np.ndarray  # a launch that waited for a launch-queue slot (a wait, SYNC_ONE)
    # GPU side
    gkind: np.ndarray
    comm: np.ndarray
    device: np.ndarray
    copy_dir: np.ndarray
    fills: np.ndarray
    launch: np.ndarray  # launching host node, -1 unknown
    d_launch: np.ndarray
    d_stream: np.ndarray
    d_res: np.ndarray
    dep: np.ndarray  # inferred cross-stream dependency, -1 none
    d_dep: np.ndarray
    origin: int  # trace start (ns): time 0 of every lane's first gap
    span_end: int
    steps: list[tuple[int, int, int]] = field(default_factory=list)  # (N, start mark, end mark)
    # cross-thread hand-offs (:mod:`.threads`): rows (successor, predecessor, delay ns)
    hand: np.ndarray = field(default_factory=lambda: np.empty((0, 3), np.int64))
    accounts: dict[int, Any] = field(default_factory=dict)  # host lane -> its host account
    event_starts: dict[int, np.ndarray] = field(default_factory=dict)  # host lane -> its CPU
    # events' starts, sorted (what the profiler recorded on that thread)
    typical: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ntype)


def structure(tl: Timeline) -> Graph:
    """The dependency graph of ``tl`` (one rank): nodes and edges, delays not yet set."""
    origin, span_end = tl.span or (0, 0)
    calls = _host_calls(tl.cpu)
    keep = calls["top"].to_numpy() == np.arange(len(calls))
    host = calls[keep].reset_index(drop=True)
    top_row = (np.cumsum(keep) - 1)[calls["top"].to_numpy()] if len(calls) else np.empty(0, int)
    marks = _markers(tl, host)
    gpu = tl.gpu.reset_index(drop=True)
    nh, nm, ng = len(host), len(marks), len(gpu)
    n = nh + nm + ng
    ntype = np.concatenate([np.full(nh, HOST), np.full(nm, MARK), np.full(ng, GPU)])
    ntype = ntype.astype(np.int8)
    start = np.concatenate([host["start"], marks["start"], gpu["start"]]).astype(np.int64)
    end = np.concatenate([host["end"], marks["start"], gpu["end"]]).astype(np.int64)
    name = np.concatenate(
        [host["name"].to_numpy(object), marks["name"].to_numpy(object),
         gpu["name"].to_numpy(object)]
    )
    # lanes: host threads, then GPU streams
    keys = np.stack([
        np.r_[np.zeros(nh + nm, np.int64), np.ones(ng, np.int64)],
        np.r_[host["pid"].to_numpy(np.int64), marks["pid"].to_numpy(np.int64),
              gpu["device"].to_numpy(np.int64)],
        np.r_[host["tid"].to_numpy(np.int64), marks["tid"].to_numpy(np.int64),
              gpu["stream"].to_numpy(np.int64)],
    ], axis=1)
    ca, ua = pd.factorize(keys[:, 1])
    cb, ub = pd.factorize(keys[:, 2])
    flat = (keys[:, 0] * len(ua) + ca) * max(len(ub), 1) + cb  # one int per (kind, a, b)
    lane = np.unique(flat, return_inverse=True)[1].reshape(-1).astype(np.int64)
    rep = np.zeros(lane.max() + 1 if n else 0, np.int64)
    rep[lane[::-1]] = np.arange(n)[::-1]  # the first row of each lane
    lanes: list[tuple[Any, ...]] = [("gpu" if keys[r, 0] else "host", int(keys[r, 1]),
                                     int(keys[r, 2])) for r in rep.tolist()]
    # order: measured start; at a tie step markers first (a call at a step's start is in
    # the step), then host calls, then GPU ops (a launch precedes its op)
    tie = np.choose(ntype, [1, 0, 2])
    order = np.lexsort((np.arange(n), tie, start))
    ntype, start, end, name, lane = ntype[order], start[order], end[order], name[order], lane[order]
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    g = Graph(
        ntype=ntype, start=start, end=end, name=name, lane=lane, lanes=lanes,
        prev=np.full(n, -1, np.int64), gap=np.zeros(n, np.int64),
        gap_kind=np.zeros(n, np.int8), launch_gap=np.zeros(n, bool),
        launches=np.zeros(n, bool), sync=np.zeros(n, np.int8),
        wait=np.full(n, -1, np.int64), base=(end - start).copy(), post=np.zeros(n, np.int64),
        queued=np.zeros(n, bool),
        gkind=np.full(n, -1, np.int8), comm=np.zeros(n, bool), device=np.full(n, -1, np.int64),
        copy_dir=np.full(n, "", object), fills=np.zeros(n, bool),
        launch=np.full(n, -1, np.int64), d_launch=np.zeros(n, np.int64),
        d_stream=np.zeros(n, np.int64), d_res=np.zeros(n, np.int64),
        dep=np.full(n, -1, np.int64), d_dep=np.zeros(n, np.int64),
        origin=int(origin), span_end=int(span_end),
    )
    gi = pos[nh + nm + np.arange(ng)]  # node ids of the GPU rows, in row order
    hi = pos[np.arange(nh)]
    kind = gpu["kind"].to_numpy(object)
    g.gkind[gi] = np.where(kind == "kernel", KERNEL, np.where(kind == "memcpy", COPY, MEMSET))
    g.comm[gi] = gpu["comm"].to_numpy(bool)
    g.device[gi] = gpu["device"].to_numpy()
    g.copy_dir[gi] = gpu["copy_kind"].to_numpy(object)
    g.fills[gi] = fills_gpu(gpu, tl.meta.device_properties)
    _link_launches(g, gpu, calls["correlation"].to_numpy(), hi[top_row], gi)
    _host_chain(g)
    _classify_gaps(g, tl.cpu)
    mk = pos[nh + np.arange(nm)]
    by_step: dict[int, list[int]] = {}
    for j, s in enumerate(marks["step"].tolist()):
        by_step.setdefault(int(s), []).append(int(mk[j]))
    g.steps = [(s, min(v), max(v)) for s, v in by_step.items() if len(v) == 2]
    return g


# --------------------------------------------------------------------------- host side


def _host_calls(cpu: pd.DataFrame) -> pd.DataFrame:
    """Top-level runtime/driver calls, by thread and start, with the correlation of every
    call nested in them (a launch recorded as a driver call inside a runtime call)."""
    calls = cpu[cpu["kind"].isin(CALL_KINDS)]
    calls = calls.sort_values(["pid", "tid", "start", "end"], ascending=[True, True, True, False])
    calls = calls.reset_index(drop=True)
    if calls.empty:
        return calls.assign(top=np.empty(0, np.int64))
    thread = calls.groupby(["pid", "tid"], sort=False).ngroup().to_numpy()
    end = calls["end"].to_numpy()
    start = calls["start"].to_numpy()
    # running max of end within a thread, over earlier calls
    run = pd.Series(end).groupby(thread).cummax().to_numpy()
    before = np.r_[np.iinfo(np.int64).min, run[:-1]]
    same = np.r_[False, thread[1:] == thread[:-1]]
    nested = same & (start < before)
    top_idx = np.maximum.accumulate(np.where(~nested, np.arange(len(calls)), 0))
    calls = calls.assign(top=top_idx)
    return calls


def _markers(tl: Timeline, calls: pd.DataFrame) -> pd.DataFrame:
    """Step markers on the thread the steps came from (else the thread with the most calls)."""
    thread = tl.meta.extra.get("steps_thread")
    if not thread and not tl.steps.empty:
        if calls.empty:
            thread = [-1, -1]
        else:
            thread = list(calls.groupby(["pid", "tid"]).size().idxmax())
    if tl.steps.empty or not thread:
        return pd.DataFrame({"start": [], "name": [], "pid": [], "tid": [], "step": []}).astype(
            {"start": "int64", "pid": "int64", "tid": "int64", "step": "int64"}
        )
    st = tl.steps.drop_duplicates("step")
    s, e, n = st["start"].to_numpy(), st["end"].to_numpy(), st["step"].to_numpy()
    k = len(st)
    return pd.DataFrame(
        {
            "start": np.r_[s, e],
            "name": [f"ProfilerStep#{x} start" for x in n] + [f"ProfilerStep#{x} end" for x in n],
            "pid": np.full(2 * k, int(thread[0])),
            "tid": np.full(2 * k, int(thread[1])),
            "step": np.r_[n, n],
        }
    )


def _link_launches(g: Graph, gpu: pd.DataFrame, corr: np.ndarray, top: np.ndarray,
                   gi: np.ndarray) -> None:
    """``corr``: correlation of every call (nested ones too); ``top``: its top-level node."""
    if not len(corr) or gpu.empty:
        return
    ok = corr >= 0
    lookup = pd.Series(top[ok], index=corr[ok])
    lookup = lookup[~lookup.index.duplicated()]
    gc = gpu["correlation"].to_numpy()
    found = pd.Series(gc).map(lookup).to_numpy()
    has = ~pd.isna(found)
    g.launch[gi[has]] = found[has].astype(np.int64)
    g.launches[found[has].astype(np.int64)] = True


def _host_chain(g: Graph) -> None:
    hostish = np.flatnonzero(g.ntype != GPU)
    if not len(hostish):
        return
    lane = g.lane[hostish]
    # nested calls were merged into their top-level call: drop them from the chain
    order = hostish[np.lexsort((hostish, lane))]
    ln = g.lane[order]
    first = np.r_[True, ln[1:] != ln[:-1]]
    prev = np.r_[-1, order[:-1]]
    prev[first] = -1
    g.prev[order] = prev
    pend = np.where(prev >= 0, g.end[np.maximum(prev, 0)], g.origin)
    g.gap[order] = g.start[order] - pend


def _classify_gaps(g: Graph, cpu: pd.DataFrame) -> None:
    """Gap kind by what covers its midpoint on the same thread; launch_gap when that CPU op
    (innermost cover) contains a launch."""
    hostish = np.flatnonzero(g.ntype != GPU)
    if not len(hostish) or cpu.empty:
        return
    ops = cpu[(cpu["kind"] == "cpu_op").to_numpy()]
    o_pid, o_tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
    o_s, o_e = ops["start"].to_numpy(), ops["end"].to_numpy()
    codes, uniq = pd.factorize(ops["name"].to_numpy(object))
    o_loader = np.array([bool(_LOADER.search(str(u))) for u in uniq], bool)[codes] \
        if len(uniq) else np.zeros(0, bool)
    mid = g.start[hostish] - g.gap[hostish] // 2
    launch_nodes = np.flatnonzero(g.launches)
    for li, lane in enumerate(g.lanes):
        if lane[0] != "host":
            continue
        sel = g.lane[hostish] == li
        if not sel.any():
            continue
        on = (o_pid == lane[1]) & (o_tid == lane[2])
        if not on.any():
            continue
        m = mid[sel]
        s, e = o_s[on], o_e[on]
        cov = _covered(s, e, m)
        lmask = o_loader[on]
        kinds = np.where(cov, GAP_CPU, GAP_IDLE)
        if lmask.any():
            kinds = np.where(_covered(s[lmask], e[lmask], m), GAP_LOADER, kinds)
        g.gap_kind[hostish[sel]] = kinds
        ls = np.sort(g.start[launch_nodes[g.lane[launch_nodes] == li]])
        if len(ls):
            n_in = np.searchsorted(ls, e) - np.searchsorted(ls, s)
            lo_ = n_in > 0
            g.launch_gap[hostish[sel]] = _covered(s[lo_], e[lo_], m)


def _covered(s: np.ndarray, e: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether each point lies in the union of [s, e)."""
    if not len(s):
        return np.zeros(len(points), bool)
    o = np.argsort(s, kind="stable")
    s, e = s[o], np.maximum.accumulate(e[o])
    k = np.searchsorted(s, points, side="right") - 1
    return (k >= 0) & (points < e[np.maximum(k, 0)])
