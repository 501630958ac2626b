"""The kernels and CPU ops that took the most time (every row; renderers show the top N).

Totals here are plain sums of durations, not unions: ten overlapping launches of
one kernel count ten times, which is what "time spent in this kernel" means.

* Kernels: per (name, device, grid, block) — grid and block as the trace records them
  ("" when it does not) — with the mean registers per thread and est. achieved occupancy
  (None when unrecorded). Order: total descending, then name, device, grid, block.
* CPU ops: per (name, input dims) — the dims "" when shapes were not recorded. ``total`` is
  inclusive (children included); ``self`` subtracts the time of the op's direct children
  (CPU ops of the same thread that it encloses). Order: self descending, then total, name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics import fraction

TOP = 10  # what renderers show by default


@dataclass(frozen=True)
class TopKernel:
    name: str
    device: int
    count: int
    total_ns: int
    mean_ns: float
    fraction: float | None  # total / summed duration of every kernel of the listed devices
    grid: str = ""
    block: str = ""
    registers_per_thread: float | None = None  # mean over the launches that record it
    occupancy: float | None = None  # mean est. achieved occupancy, %


@dataclass(frozen=True)
class TopOp:
    name: str
    count: int
    total_ns: int  # inclusive: a CPU op's children are part of its time
    mean_ns: float
    self_ns: int = 0  # total minus the direct children's time
    input_dims: str = ""  # compact JSON of the inputs' shapes; "" when not recorded
    input_types: str = ""


def _totals(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per distinct ``by``: ``calls`` and ``total`` duration; largest total first, then ``by``.

    Groups by factorizing each key column once (numpy counts and int64 sums): the
    same rows as ``groupby(by).agg(...)``, without its per-call overhead.
    """
    dur = df["end"].to_numpy(dtype=np.int64) - df["start"].to_numpy(dtype=np.int64)
    group = np.zeros(len(df), np.int64)
    keep = np.ones(len(df), bool)
    uniques = []
    for col in by:  # mixed-radix code of the key tuple
        codes, uniq = pd.factorize(df[col], sort=False)
        keep &= codes >= 0  # like groupby: rows with a missing key belong to no group
        group = group * max(len(uniq), 1) + codes
        uniques.append(uniq)
    group, combos = pd.factorize(group[keep], sort=False)
    dur = dur[keep]
    total = np.zeros(len(combos), np.int64)
    np.add.at(total, group, dur)
    columns = {}
    for col, uniq in reversed(list(zip(by, uniques, strict=True))):
        combos, code = np.divmod(combos, max(len(uniq), 1))
        columns[col] = np.asarray(uniq)[code]
    agg = pd.DataFrame({col: columns[col] for col in by})
    agg["calls"] = np.bincount(group, minlength=len(total))
    agg["total"] = total
    return agg.sort_values(["total", *by], ascending=[False, *([True] * len(by))], kind="stable")


def top_kernels(
    gpu: pd.DataFrame, devices: Sequence[int], n: int | None = None
) -> tuple[TopKernel, ...]:
    """(kernel name, device, grid, block) groups by summed duration; the first ``n`` (all if
    None)."""
    k = gpu[(gpu["kind"] == "kernel") & gpu["device"].isin(list(devices))]
    if k.empty:
        return ()
    k = k.assign(grid=_col(k, "grid", ""), block=_col(k, "block", ""))
    all_ns = int((k["end"] - k["start"]).sum())
    rows = _totals(k, ["name", "device", "grid", "block"])
    rows = rows if n is None else rows.head(n)
    means = _means(k, ["name", "device", "grid", "block"], ("registers_per_thread", "occupancy"))
    return tuple(
        TopKernel(
            name=str(r.name),
            device=int(r.device),
            count=int(r.calls),
            total_ns=int(r.total),
            mean_ns=int(r.total) / int(r.calls),
            fraction=fraction(int(r.total), all_ns),
            grid=str(r.grid),
            block=str(r.block),
            registers_per_thread=means.get((*r[:4], "registers_per_thread")),
            occupancy=means.get((*r[:4], "occupancy")),
        )
        for r in rows.itertuples(index=False)
    )


def top_ops(cpu: pd.DataFrame, n: int | None = None) -> tuple[TopOp, ...]:
    """(CPU op name, input dims) groups by self time (all processes); the first ``n``."""
    ops = cpu[cpu["kind"] == "cpu_op"]
    if ops.empty:
        return ()
    ops = ops.assign(self_ns=_self_time(ops), input_dims=_col(ops, "input_dims", ""),
                     input_types=_col(ops, "input_types", ""))
    rows = _totals(ops, ["name", "input_dims"])
    by = ops.groupby(["name", "input_dims"], sort=False)  # per column: no dict-like agg's cost
    selfs = pd.DataFrame({"self_ns": by["self_ns"].sum(), "types": by["input_types"].first()})
    rows = rows.join(selfs, on=["name", "input_dims"])
    rows = rows.sort_values(["self_ns", "total", "name", "input_dims"],
                            ascending=[False, False, True, True], kind="stable")
    rows = rows if n is None else rows.head(n)
    return tuple(
        TopOp(str(r.name), int(r.calls), int(r.total), int(r.total) / int(r.calls),
              int(r.self_ns), str(r.input_dims), str(r.types))
        for r in rows.itertuples(index=False)
    )


def _col(df: pd.DataFrame, name: str, default: object) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(default, index=df.index, dtype=object)


def _means(df: pd.DataFrame, by: list[str], cols: tuple[str, ...]) -> dict[tuple, float]:
    """Mean of each of ``cols`` per ``by`` group, over the rows that record it (>= 0)."""
    out: dict[tuple, float] = {}
    for c in cols:
        if c not in df.columns:
            continue
        v = df[df[c].astype(float) >= 0]
        if v.empty:
            continue
        for key, m in v.groupby(by, sort=False)[c].mean().items():
            out[(*key, c)] = float(m)
    return out


def _self_time(ops: pd.DataFrame) -> np.ndarray:
    """Per op: its duration minus its direct children's (ops of its thread that it encloses).

    Ops of one thread nest; sorted by start (longer first on ties), a stack of open ops
    gives each op its parent.
    """
    s = ops["start"].to_numpy(dtype=np.int64)
    e = ops["end"].to_numpy(dtype=np.int64)
    pid = ops["pid"].to_numpy(dtype=np.int64)
    tid = ops["tid"].to_numpy(dtype=np.int64)
    order = np.lexsort((-e, s, tid, pid))
    self_ns = (e - s).tolist()
    sl, el, pl, tl = s.tolist(), e.tolist(), pid.tolist(), tid.tolist()  # plain ints: fast
    stack: list[int] = []
    last = (None, None)
    for i in order.tolist():
        thread = (pl[i], tl[i])
        if thread != last:
            stack.clear()
            last = thread
        while stack and el[stack[-1]] <= sl[i]:
            stack.pop()
        if stack and el[i] <= el[stack[-1]]:
            self_ns[stack[-1]] -= el[i] - sl[i]
        stack.append(i)
    return np.maximum(np.asarray(self_ns, dtype=np.int64), 0)
