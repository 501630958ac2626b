"""GPU time per ``nn.Module``: the module view of a trace recorded ``with_modules=True``.

The profiler writes one ``python_function`` event ``nn.Module: Name_k`` per module call,
nested as the modules are. A kernel belongs to the innermost module call around its
launching runtime call (same thread, by time); its time is that module's **self** time and
part of the **total** time of the module and of every module around it. Rows are module
paths (``Model_0/TransformerEncoder_0/Linear_1``), over all their calls. Kernels launched
outside every module (the backward pass runs on the autograd thread, which has no module
events; the optimizer step) are ``outside_ns``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics.nesting import parents
from traceprobe.timeline import Timeline

PREFIX = "nn.Module: "
LAUNCH_KINDS = ("cuda_runtime", "cuda_driver")


@dataclass(frozen=True)
class ModuleView:
    rows: pd.DataFrame  # path, depth, calls, self_ns, total_ns; in tree order
    outside_ns: float  # kernel time launched outside every module

    def to_dict(self, limit: int = 200) -> dict[str, object]:
        rows = [{"path": str(r.path), "depth": int(r.depth), "calls": int(r.calls),
                 "self_us": float(r.self_ns) / 1e3, "total_us": float(r.total_ns) / 1e3}
                for r in self.rows.head(limit).itertuples()]
        return {"rows": rows, "outside_us": self.outside_ns / 1e3,
                "truncated": max(len(self.rows) - limit, 0)}


def module_view(tl: Timeline, window: tuple[int, int] | None = None) -> ModuleView | None:
    """None when the trace has no module events. ``window``: only the launch calls that start
    in it."""
    cpu, gpu = tl.cpu, tl.gpu
    if cpu.empty:
        return None
    names = cpu["name"].to_numpy(object)
    kind = cpu["kind"].to_numpy(object)
    is_mod = kind == "python_function"
    if is_mod.any():
        py = np.flatnonzero(is_mod)
        is_mod[py] = pd.Series(names[py]).str.startswith(PREFIX).to_numpy(bool)
    if not is_mod.any():
        return None
    is_call = np.isin(kind, LAUNCH_KINDS) & (cpu["correlation"].to_numpy() >= 0)
    if window is not None:
        st = cpu["start"].to_numpy()
        is_call &= (st >= window[0]) & (st < window[1])
    sel = np.flatnonzero(is_mod | is_call)
    sub = cpu.iloc[sel]
    mod = is_mod[sel]
    par = parents(sub["start"].to_numpy(), sub["end"].to_numpy(),
                  [sub["pid"].to_numpy(), sub["tid"].to_numpy()])
    # each item's innermost enclosing module (calls nested in calls go up)
    up = par.copy()
    live = np.flatnonzero((up >= 0) & ~mod[np.maximum(up, 0)])
    while len(live):
        up[live] = par[up[live]]
        live = live[(up[live] >= 0) & ~mod[np.maximum(up[live], 0)]]
    m_idx = np.flatnonzero(mod)
    pos = np.full(len(sel), -1, np.int64)
    pos[m_idx] = np.arange(len(m_idx))
    m_parent = np.where(up[m_idx] >= 0, pos[np.maximum(up[m_idx], 0)], -1)
    m_parent[up[m_idx] < 0] = -1
    # kernel time per launching call, then per module call (self)
    k = gpu[gpu["kind"].to_numpy() == "kernel"] if len(gpu) else gpu
    call_rows = np.flatnonzero(~mod)
    corr = sub["correlation"].to_numpy()[call_rows]
    kt = (pd.Series(k["end"].to_numpy() - k["start"].to_numpy()).groupby(
        k["correlation"].to_numpy()).sum() if len(k) else pd.Series(dtype=float))
    call_t = kt.reindex(corr).fillna(0.0).to_numpy(float)
    call_mod = np.where(up[call_rows] >= 0, pos[np.maximum(up[call_rows], 0)], -1)
    inside = call_mod >= 0
    self_t = np.bincount(call_mod[inside], weights=call_t[inside], minlength=len(m_idx))
    outside = float(call_t[~inside].sum())
    # totals: add each module call's self time to every module around it
    total = self_t.copy()
    anc = m_parent.copy()
    live = np.flatnonzero(anc >= 0)
    while len(live):
        np.add.at(total, anc[live], self_t[live])
        anc[live] = m_parent[anc[live]]
        live = live[anc[live] >= 0]
    # paths, one depth level at a time
    short = pd.Series(names[sel[m_idx]]).str.slice(len(PREFIX)).to_numpy(object)
    path = np.full(len(m_idx), "", object)
    depth = np.full(len(m_idx), -1, np.int64)
    level = np.flatnonzero(m_parent < 0)
    d = 0
    while len(level):
        path[level] = short[level] if d == 0 else path[m_parent[level]] + "/" + short[level]
        depth[level] = d
        nxt = np.flatnonzero(np.isin(m_parent, level))
        level, d = nxt, d + 1
    df = pd.DataFrame({"path": path, "depth": depth, "self_ns": self_t, "total_ns": total})
    rows = df.groupby(["path", "depth"], sort=True).agg(
        calls=("self_ns", "size"), self_ns=("self_ns", "sum"),
        total_ns=("total_ns", "sum")).reset_index()
    return ModuleView(rows, outside)
