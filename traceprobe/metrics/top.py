"""The kernels and CPU ops that took the most time.

Totals here are plain sums of durations, not unions: ten overlapping launches of
one kernel count ten times, which is what "time spent in this kernel" means. Order:
total descending, then name (then device) ascending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics import fraction

TOP = 10


@dataclass(frozen=True)
class TopKernel:
    name: str
    device: int
    count: int
    total_ns: int
    mean_ns: float
    fraction: float | None  # total / summed duration of every kernel of the listed devices


@dataclass(frozen=True)
class TopOp:
    name: str
    count: int
    total_ns: int  # inclusive: a CPU op's children are part of its time
    mean_ns: float


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


def top_kernels(gpu: pd.DataFrame, devices: Sequence[int], n: int = TOP) -> tuple[TopKernel, ...]:
    """The ``n`` (kernel name, device) pairs with the largest summed duration."""
    k = gpu[(gpu["kind"] == "kernel") & gpu["device"].isin(list(devices))]
    if k.empty:
        return ()
    all_ns = int((k["end"] - k["start"]).sum())
    rows = _totals(k, ["name", "device"]).head(n)
    return tuple(
        TopKernel(
            name=str(r.name),
            device=int(r.device),
            count=int(r.calls),
            total_ns=int(r.total),
            mean_ns=int(r.total) / int(r.calls),
            fraction=fraction(int(r.total), all_ns),
        )
        for r in rows.itertuples(index=False)
    )


def top_ops(cpu: pd.DataFrame, n: int = TOP) -> tuple[TopOp, ...]:
    """The ``n`` CPU op names with the largest summed inclusive duration (all processes)."""
    ops = cpu.loc[cpu["kind"] == "cpu_op", ["name", "start", "end"]]
    if ops.empty:
        return ()
    rows = _totals(ops, ["name"]).head(n)
    return tuple(
        TopOp(str(r.name), int(r.calls), int(r.total), int(r.total) / int(r.calls))
        for r in rows.itertuples(index=False)
    )
