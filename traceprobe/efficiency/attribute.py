"""Kernels to ops, and ops to rows of work: the table every efficiency figure reads.

* **Which op counts.** Ops nest (``aten::linear`` > ``aten::addmm``; ``aten::convolution`` >
  ``aten::_convolution`` > ``aten::cudnn_convolution``). The work of a nest is the work of its
  *outermost* op that has a formula (:data:`~traceprobe.efficiency.work.FORMULAS`), as
  ``FlopCounterMode`` counts the outermost op it sees; the ops nested in it count nothing.
* **Which op owns a kernel.** A kernel's launching runtime call has the kernel's correlation
  id; the call's ``External id`` names the innermost op around it (the kernel's own
  ``External id`` when the call is missing). The kernel belongs to that op's outermost
  formula ancestor, or to the op itself when no ancestor has a formula.
* **Rows.** Owners and counted ops are grouped by (name, Input Dims, Input type): one row per
  op shape. Kernels no op owns are grouped by kernel name. On a trace with kernels, a row's
  FLOPs and bytes are those of its op instances that own a kernel, so that its rate is the
  work of the instances over the time of their kernels.

Everything is vectorised over rows; the formulas run once per distinct op shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.efficiency import kernels as kn
from traceprobe.efficiency.work import COMM, COPY, FORMULAS, MATRIX, OTHER, category_of_name, work
from traceprobe.metrics.nesting import parents
from traceprobe.timeline import Timeline

LAUNCH_KINDS = ("cuda_runtime", "cuda_driver")
GROUP_COLUMNS = ("op", "input_dims", "input_types", "kernel", "category", "dtype", "calls",
                 "flops", "bytes", "kernels", "time_ns", "tc_ns", "device")


@dataclass(frozen=True)
class Attribution:
    """``groups``: one row per op shape (columns :data:`GROUP_COLUMNS`; ``flops``/``bytes``
    NaN where unknown); ``kernel_group``: per ``tl.gpu`` row its group (-1: not a kernel);
    ``kernel_tc``/``kernel_category``: per ``tl.gpu`` row; ``shapes``: whether the trace
    recorded op shapes."""

    groups: pd.DataFrame
    kernel_group: np.ndarray
    kernel_tc: np.ndarray
    kernel_category: np.ndarray
    shapes: bool


def _col(df: pd.DataFrame, name: str, default: object = "") -> np.ndarray:
    if name in df.columns:
        return df[name].to_numpy()
    return np.full(len(df), default, object)


def _top_formula(par: np.ndarray, has: np.ndarray) -> np.ndarray:
    """Per op: its outermost ancestor-or-self with a formula, -1 when none."""
    idx = np.arange(len(par))
    top = np.where(has, idx, -1)
    anc = par.copy()
    live = np.flatnonzero(anc >= 0)
    while len(live):
        a = anc[live]
        hit = has[a]
        top[live[hit]] = a[hit]
        nxt = par[a]
        anc[live] = nxt
        live = live[nxt >= 0]
    return top


def attribute(tl: Timeline, window: tuple[int, int] | None = None) -> Attribution:
    """The rows of ``tl``; with ``window`` (lo, hi ns) only the ops that start in it and the
    kernels their runtime calls launched from it (kernels with no recorded call: those that
    start in it, when the trace records no launch calls at all)."""
    cpu, gpu = tl.cpu, tl.gpu
    is_op = cpu["kind"].to_numpy() == "cpu_op" if len(cpu) else np.zeros(0, bool)
    rows_op = np.flatnonzero(is_op)
    n = len(rows_op)

    def ops(c: str) -> np.ndarray:
        return _col(cpu, c)[rows_op]

    name = ops("name").astype(object)
    has = np.asarray(pd.Index(name).isin(list(FORMULAS)), bool) if n else np.zeros(0, bool)

    # kernels -> the innermost op around their launching call
    is_k = gpu["kind"].to_numpy() == "kernel" if len(gpu) else np.zeros(0, bool)
    k_rows = np.flatnonzero(is_k)
    launch = np.isin(_col(cpu, "kind"), LAUNCH_KINDS) & (_col(cpu, "correlation", -1) >= 0)
    c_corr = _col(cpu, "correlation", -1)[launch]
    k_corr = gpu["correlation"].to_numpy()[k_rows] if len(k_rows) else np.zeros(0, np.int64)
    if window is not None and len(k_rows):
        if launch.any():
            corr_start = pd.Series(_col(cpu, "start")[launch], index=c_corr)
            corr_start = corr_start[~corr_start.index.duplicated()]
            # int64 throughout (epoch ns in float64 resolve only 256 ns); no launch: outside
            cs = corr_start.reindex(k_corr, fill_value=np.iinfo(np.int64).min).to_numpy()
        else:
            cs = gpu["start"].to_numpy()[k_rows]
        inside = (cs >= window[0]) & (cs < window[1])
        k_rows, k_corr = k_rows[inside], k_corr[inside]
    kop = np.full(len(k_rows), -1, np.int64)
    if n and len(k_rows):
        ext_to_op = pd.Series(np.arange(n), index=ops("external_id"))
        ext_to_op = ext_to_op[ext_to_op.index >= 0]
        ext_to_op = ext_to_op[~ext_to_op.index.duplicated()]
        corr_to_ext = pd.Series(_col(cpu, "external_id", -1)[launch], index=c_corr)
        corr_to_ext = corr_to_ext[~corr_to_ext.index.duplicated()]
        ext = corr_to_ext.reindex(k_corr).to_numpy()
        own = gpu["external_id"].to_numpy()[k_rows]
        ext = np.where(np.isnan(ext), own, ext).astype(np.int64)
        found = ext_to_op.reindex(ext).to_numpy()
        ok = ~np.isnan(found)
        kop[ok] = found[ok].astype(np.int64)

    # nesting among the ops with a formula and the launching ops only: the chain of such
    # ancestors is the same whatever else lies between them
    launched = np.zeros(n, bool)
    launched[kop[kop >= 0]] = True
    nest = np.flatnonzero(has | launched)
    top = np.full(n, -1, np.int64)
    if len(nest):
        rn = rows_op[nest]
        par = parents(_col(cpu, "start")[rn], _col(cpu, "end")[rn],
                      [_col(cpu, "pid")[rn], _col(cpu, "tid")[rn]])
        t = _top_formula(par, has[nest])
        top[nest] = np.where(t >= 0, nest[np.maximum(t, 0)], -1)
    counted = has & (top == np.arange(n))
    if window is not None and n:
        st = ops("start")
        counted &= (st >= window[0]) & (st < window[1])
    ok = kop >= 0
    kop[ok] = np.where(top[kop[ok]] >= 0, top[kop[ok]], kop[ok])

    # the ops that matter: counted ones (on a trace with kernels: those that own one) and
    # kernel owners; grouped by (name, dims, types)
    with_k = np.zeros(n, bool)
    with_k[kop[kop >= 0]] = True
    if len(k_rows):
        counted &= with_k
    sub = np.flatnonzero(counted | with_k)
    dims = np.full(n, "", object)
    types = np.full(n, "", object)
    concrete = np.full(n, "", object)
    for arr, col in ((dims, "input_dims"), (types, "input_types"),
                     (concrete, "concrete_inputs")):
        arr[sub] = _col(cpu, col)[rows_op[sub]]
    shapes = bool(np.any(_col(cpu, "input_dims")[rows_op] != "")) if n else False
    codes, first = _codes(name[sub], dims[sub], types[sub])
    gid = np.full(n, -1, np.int64)
    gid[sub] = codes
    gfirst = sub[first]
    ng = len(gfirst)
    kn_names = gpu["name"].to_numpy(object)[k_rows] if len(k_rows) else np.zeros(0, object)
    tc, kcat, name_code = kn.per_name(kn_names)
    comm = gpu["comm"].to_numpy(bool)[k_rows] if len(k_rows) else np.zeros(0, bool)
    # kernels with no op: groups by kernel name, after the op groups
    orphan = kop < 0
    o_codes, o_first = _codes(name_code[orphan])
    o_uniq = kn_names[orphan][o_first]
    kgroup = np.empty(len(k_rows), np.int64)
    kgroup[~orphan] = gid[kop[~orphan]]
    kgroup[orphan] = ng + o_codes
    total = ng + len(o_uniq)

    dur = (gpu["end"].to_numpy()[k_rows] - gpu["start"].to_numpy()[k_rows]) if len(k_rows) \
        else np.zeros(0, np.int64)
    dev = gpu["device"].to_numpy()[k_rows] if len(k_rows) else np.zeros(0, np.int64)
    time_ns = np.bincount(kgroup, weights=dur, minlength=total).astype(float)
    tc_ns = np.bincount(kgroup, weights=dur * tc, minlength=total).astype(float)
    kcount = np.bincount(kgroup, minlength=total)

    # work per counted op: each distinct (name, dims, types, concrete) once
    flops = np.full(n, np.nan)
    nbytes = np.full(n, np.nan)
    dtype = np.full(n, "", object)
    cat_op = np.full(n, OTHER, object)
    if len(sub):
        cat_of = {nm: category_of_name(str(nm)) for nm in pd.unique(name[gfirst])}
        cat_op[sub] = pd.Series(name[sub]).map(cat_of).to_numpy(object)
        wcodes, wfirst = _codes(name[sub], dims[sub], types[sub], concrete[sub])
        r0 = sub[wfirst]
        ws = [work(*map(str, t)) for t in zip(name[r0], dims[r0], types[r0], concrete[r0],
                                               strict=True)]
        fl = np.array([np.nan if w.flops is None else w.flops for w in ws], float)
        by = np.array([np.nan if w.bytes is None else w.bytes for w in ws], float)
        dt = np.array([w.dtype for w in ws], object)
        dtype[sub] = dt[wcodes]
        u = counted[sub]
        flops[sub[u]] = fl[wcodes[u]]
        nbytes[sub[u]] = by[wcodes[u]]
    g_flops = _sum_nan(gid[counted], flops[counted], total)
    g_bytes = _sum_nan(gid[counted], nbytes[counted], total)
    calls_n = np.bincount(gid[counted], minlength=total).astype(np.int64)
    op_first = gfirst
    # kernel category of each group: the most common (by time) of its kernels
    kc_group = _dominant(kgroup, kcat, dur, total)
    category = np.full(total, OTHER, object)
    if ng:
        category[:ng] = cat_op[op_first]
    category[ng:] = kc_group[ng:]
    fallback = (category == OTHER) & (kc_group != "")
    category[fallback] = kc_group[fallback]
    comm_g = np.bincount(kgroup, weights=comm.astype(float), minlength=total) > 0
    category[comm_g] = COMM
    group_dtype = np.full(total, "", object)
    if ng:
        group_dtype[:ng] = _first_nonempty(gid[sub], dtype[sub], ng)
    dev_g = _dominant(kgroup, dev.astype(object), dur, total)
    groups = pd.DataFrame({
        "op": np.r_[name[gfirst], np.full(len(o_uniq), "", object)],
        "input_dims": np.r_[dims[gfirst], np.full(len(o_uniq), "", object)],
        "input_types": np.r_[types[gfirst], np.full(len(o_uniq), "", object)],
        "kernel": np.r_[np.full(ng, "", object), np.asarray(o_uniq, object)],
        "category": category, "dtype": group_dtype, "calls": calls_n, "flops": g_flops,
        "bytes": g_bytes, "kernels": kcount, "time_ns": time_ns, "tc_ns": tc_ns,
        "device": np.array([-1 if d == "" else int(d) for d in dev_g], np.int64),
    })
    kernel_group = np.full(len(gpu), -1, np.int64)
    kernel_group[k_rows] = kgroup
    kernel_tc = np.zeros(len(gpu), bool)
    kernel_tc[k_rows] = tc
    kernel_category = np.full(len(gpu), "", object)
    kernel_category[k_rows] = np.where(comm, COMM, np.where(
        kgroup < ng, category[kgroup], kcat))
    kind = gpu["kind"].to_numpy() if len(gpu) else np.zeros(0, object)
    kernel_category[(kind == "memcpy") | (kind == "memset")] = COPY
    keep = (groups["kernels"].to_numpy() > 0) | (groups["calls"].to_numpy() > 0)
    # the matrix categories keep their rows even without a kernel (a CPU trace's GEMMs)
    keep |= groups["category"].isin(list(MATRIX)).to_numpy() & ~np.isnan(g_flops)
    remap = np.full(total, -1, np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    kernel_group[k_rows] = remap[kgroup]
    return Attribution(groups[keep].reset_index(drop=True), kernel_group, kernel_tc,
                       kernel_category, shapes)


def _codes(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group codes of the rows' value tuples (in order of first appearance) and each group's
    first row."""
    n = len(cols[0])
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    key = np.zeros(n, np.int64)
    for c in cols:
        codes, uniq = pd.factorize(c)
        key = key * (len(uniq) + 1) + codes
        key = pd.factorize(key)[0].astype(np.int64)  # keep the product small
    first = np.full(int(key.max()) + 1, -1, np.int64)
    first[key[::-1]] = np.arange(n)[::-1]
    return key, first


def _sum_nan(g: np.ndarray, v: np.ndarray, total: int) -> np.ndarray:
    """Per group the sum of ``v``; NaN when any value is NaN or the group has none."""
    s = np.bincount(g, weights=np.nan_to_num(v), minlength=total).astype(float)
    bad = np.bincount(g, weights=np.isnan(v).astype(float), minlength=total) > 0
    cnt = np.bincount(g, minlength=total)
    s[bad | (cnt == 0)] = np.nan
    return s


def _dominant(g: np.ndarray, values: np.ndarray, w: np.ndarray, total: int) -> np.ndarray:
    """Per group the value with the largest summed weight ("" when the group has none)."""
    out = np.full(total, "", object)
    if not len(g):
        return out
    codes, uniq = pd.factorize(values)
    nv = len(uniq)
    m = np.bincount(g * nv + codes, weights=w.astype(float) + 1e-9, minlength=total * nv)
    m = m.reshape(total, nv)
    has = m.max(axis=1) > 0
    out[has] = np.asarray(uniq, object)[m.argmax(axis=1)[has]]
    return out


def _first_nonempty(g: np.ndarray, v: np.ndarray, total: int) -> np.ndarray:
    out = np.full(total, "", object)
    ok = v != ""
    gi, vi = g[ok][::-1], v[ok][::-1]
    out[gi] = vi
    return out
