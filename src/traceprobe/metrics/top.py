"""The kernels and CPU ops that took the most time.

Totals here are plain sums of durations, not unions: ten overlapping launches of
one kernel count ten times, which is what "time spent in this kernel" means. Order:
total descending, then name (then device) ascending.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
    frame = df[by].copy()
    frame["dur"] = (df["end"] - df["start"]).to_numpy()
    agg = frame.groupby(by, sort=False).agg(calls=("dur", "size"), total=("dur", "sum"))
    return agg.reset_index().sort_values(
        ["total", *by], ascending=[False, *([True] * len(by))], kind="stable"
    )


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
    ops = cpu[cpu["kind"] == "cpu_op"]
    if ops.empty:
        return ()
    rows = _totals(ops, ["name"]).head(n)
    return tuple(
        TopOp(str(r.name), int(r.calls), int(r.total), int(r.total) / int(r.calls))
        for r in rows.itertuples(index=False)
    )
