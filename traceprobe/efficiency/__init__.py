"""Kernel efficiency: work per op from recorded shapes, achieved rate against the device's
roof, the precision finding, the tensor-core share and the module view.

One entry point for the report, :func:`efficiency` (a Timeline in, an :class:`Efficiency`
out), and one for the what-if replay, :func:`kernel_factors`. Inside, one way:
:mod:`.work` (formulas) and :mod:`.kernels` (kernel-name rules) -> :mod:`.attribute`
(kernels to ops, ops to rows) -> :mod:`.roofline` (rates, roof) -> :mod:`.precision`;
:mod:`.modules` beside them; :mod:`.devices` is the table of peaks. Torch-free.
Definitions: docs/FIGURES.md, "Kernel efficiency".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.efficiency.attribute import attribute
from traceprobe.efficiency.devices import Roof, device_roofs
from traceprobe.efficiency.modules import ModuleView, module_view
from traceprobe.efficiency.precision import Finding, at_roof_share, finding, matching, precision
from traceprobe.efficiency.roofline import by_category, with_roof
from traceprobe.efficiency.work import GEMM
from traceprobe.timeline import Timeline

__all__ = ["Efficiency", "efficiency", "kernel_factors"]

ROW_LIMIT = 40  # rows kept in the report (by kernel time; CSV and --plot read these)
NO_SHAPES = ("the trace has no op shapes: record with record_shapes=True to get FLOPs, bytes, "
             "achieved TFLOP/s and GB/s, the roof fraction and the precision what-ifs per op")


@dataclass(frozen=True)
class Efficiency:
    device: str  # the busiest device's name in the trace ("" when none)
    roof: Roof | None
    shapes: bool
    rows: pd.DataFrame  # every row (roofline.with_roof columns), by kernel time
    categories: pd.DataFrame
    kernel_ns: float
    tensor_core_ns: float
    finding: Finding | None
    modules: ModuleView | None
    notes: tuple[str, ...] = field(default=())

    @property
    def tensor_core_fraction(self) -> float | None:
        return self.tensor_core_ns / self.kernel_ns if self.kernel_ns > 0 else None

    def category(self, name: str) -> dict[str, Any] | None:
        c = self.categories[self.categories["category"] == name]
        return None if c.empty else _plain(c.iloc[0].to_dict())

    @property
    def gemm_roof_fraction(self) -> float | None:
        c = self.category(GEMM)
        return None if c is None else c.get("roof_fraction")

    def to_dict(self) -> dict[str, Any]:
        rows = self.rows.head(ROW_LIMIT)
        return {
            "device": self.device,
            "roof": None if self.roof is None else self.roof.to_dict(),
            "shapes": self.shapes,
            "kernel_us": self.kernel_ns / 1e3,
            "tensor_core_fraction": self.tensor_core_fraction,
            "gemm_roof_fraction": self.gemm_roof_fraction,
            "categories": [_category_dict(r) for r in self.categories.to_dict("records")],
            "rows": [_row_dict(r) for r in rows.to_dict("records")],
            "rows_left_out": max(len(self.rows) - ROW_LIMIT, 0),
            "precision": None if self.finding is None else self.finding.to_dict(),
            "modules": None if self.modules is None else self.modules.to_dict(),
            "notes": list(self.notes),
        }


def _plain(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not np.isfinite(v):
            v = None
        out[k] = v
    return out


def _category_dict(r: dict[str, Any]) -> dict[str, Any]:
    r = _plain(r)
    return {"category": r["category"], "kernels": r["kernels"], "time_us": r["time_ns"] / 1e3,
            "tensor_core_us": r["tc_ns"] / 1e3, "known_us": r["known_ns"] / 1e3,
            "flops": r["flops"], "bytes": r["bytes"], "tflops": r["tflops"], "gbs": r["gbs"],
            "roof_fraction": r["roof_fraction"]}


def _row_dict(r: dict[str, Any]) -> dict[str, Any]:
    r = _plain(r)
    return {"op": r["op"], "input_dims": r["input_dims"], "input_types": r["input_types"],
            "kernel": r["kernel"], "category": r["category"], "dtype": r["dtype"],
            "calls": r["calls"], "kernels": r["kernels"], "time_us": r["time_ns"] / 1e3,
            "tensor_core": r["tensor_core"], "flops": r["flops"], "bytes": r["bytes"],
            "tflops": r["tflops"], "gbs": r["gbs"], "intensity": r["intensity"],
            "peak_key": r["peak_key"], "peak_tflops": r["peak_tflops"],
            "roof_fraction": r["roof_fraction"], "bound": r["bound"]}


def _roof(tl: Timeline, groups: pd.DataFrame) -> tuple[str, Roof | None, list[str]]:
    roofs = device_roofs(tl.meta.device_properties)
    notes: list[str] = []
    busy = groups.groupby("device")["time_ns"].sum() if len(groups) else pd.Series(dtype=float)
    busy = busy[busy.index >= 0]
    if busy.empty:
        return "", None, notes
    dev = int(busy.idxmax())
    name, roof = roofs.get(dev, ("", None))
    if roof is None:
        notes.append(f"device {dev} ({name or 'no name in deviceProperties'}) is not in the "
                     "device table: rates are given without a roof (traceprobe/efficiency/"
                     "devices.py lists the known GPUs)")
    others = [roofs.get(int(d), ("", None))[1] for d in busy.index if int(d) != dev]
    if any(r is not roof for r in others):
        notes.append(f"the devices differ: every rate is measured against device {dev}'s roof")
    return name, roof, notes


def _rows(tl: Timeline, window: tuple[int, int] | None = None
          ) -> tuple[Any, pd.DataFrame, str, Roof | None, list[str]]:
    a = attribute(tl, window)
    name, roof, notes = _roof(tl, a.groups)
    rows = with_roof(a.groups, roof)
    return a, rows, name, roof, notes


def efficiency(tl: Timeline, window: tuple[int, int] | None = None) -> Efficiency:
    """The kernel-efficiency figures of ``tl``: of the ops that start in ``window`` (lo, hi
    ns) and the kernels they launched, wherever those ran (a GPU-bound step's kernels run
    after the step's host window); None: of the whole trace."""
    a, rows, name, roof, notes = _rows(tl, window)
    if not a.shapes:
        notes.append(NO_SHAPES)
    k = a.kernel_group >= 0
    dur = (tl.gpu["end"].to_numpy() - tl.gpu["start"].to_numpy()).astype(float)[k]  # int64 first
    order = np.argsort(-rows["time_ns"].to_numpy(float), kind="stable")
    ordered = rows.iloc[order].reset_index(drop=True)
    return Efficiency(
        device=name, roof=roof, shapes=a.shapes, rows=ordered, categories=by_category(rows),
        kernel_ns=float(dur.sum()), tensor_core_ns=float(dur[a.kernel_tc[k]].sum()),
        finding=finding(rows, roof, _steps_in(tl, window)), modules=module_view(tl, window),
        notes=tuple(notes))


def _steps_in(tl: Timeline, window: tuple[int, int] | None) -> int:
    st = tl.steps["start"].to_numpy() if len(tl.steps) else np.zeros(0, np.int64)
    if window is None:
        return len(st)
    return int(((st >= window[0]) & (st < window[1])).sum())


def _by_name(tl: Timeline, rows: pd.DataFrame, kg: np.ndarray, out: np.ndarray,
             dur: np.ndarray) -> int:
    """Kernels with no op in the trace (launched before the recording began: a GPU-bound
    loop's backlog from the profiler's warm-up steps) take, in place in ``out``, the
    time-weighted mean factor of the kernels of the same name that an op's shapes rescaled;
    returns how many did."""
    has = kg >= 0
    if not has.any():
        return 0
    op_less = np.zeros(len(out), bool)
    op_less[has] = rows["op"].to_numpy(object)[kg[has]] == ""
    codes, _ = pd.factorize(tl.gpu["name"].to_numpy(object))
    known = has & ~op_less
    n = int(codes.max()) + 1 if len(codes) else 0
    w = np.bincount(codes[known], weights=dur[known], minlength=n)
    wf = np.bincount(codes[known], weights=(dur * out)[known], minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        by = np.where(w > 0, wf / w, 1.0)
    take = op_less & (by[codes] < 1.0)
    out[take] = by[codes[take]]
    return int(take.sum())


def kernel_factors(tl: Timeline, scenario: str) -> tuple[np.ndarray, str]:
    """Per ``tl.gpu`` row the factor on its duration under an efficiency scenario
    (``precision:tf32``, ``precision:bf16``, ``roof:REGEX=S``), and a note saying what
    changed. Raises ValueError for a scenario it does not know."""
    head, _, arg = scenario.partition(":")
    a, rows, _, roof, _ = _rows(tl)
    out = np.ones(len(tl.gpu))
    kg = a.kernel_group
    has = kg >= 0
    if head == "precision":
        if arg not in ("tf32", "bf16"):
            raise ValueError(f"precision:{arg}: the precisions are tf32 and bf16")
        if roof is None:
            return out, f"{scenario}: the device is not in the device table; nothing rescaled"
        r = precision(rows, roof, arg)
        out[has] = r.factor[kg[has]]
        dur = (tl.gpu["end"].to_numpy() - tl.gpu["start"].to_numpy()).astype(float)
        orphans = _by_name(tl, rows, kg, out, dur)
        note = (f"{scenario}: {r.matched} fp32 op shapes rescaled to {arg}; kernel time "
                f"{dur[has].sum() / 1e6:.4g} ms -> {(dur * out)[has].sum() / 1e6:.4g} ms "
                "(a step the host does not wait for keeps its length)")
        if orphans:
            note += (f"; {orphans} kernels launched before the recording began took the "
                     "factor of their name's rescaled kernels")
        if r.unknown:
            note += f"; {r.unknown} left as measured (no shapes: record_shapes=True)"
        return out, note
    if head == "roof":
        rx_text, _, share_text = arg.rpartition("=")
        share = float(share_text)
        if not 0 < share <= 1:
            raise ValueError(f"{scenario}: the share after '=' is in (0, 1], e.g. roof:gemm=0.7")
        if roof is None:
            return out, f"{scenario}: the device is not in the device table; nothing rescaled"
        hit = has & matching(tl.gpu["name"].to_numpy(object), re.compile(rx_text))
        f = at_roof_share(rows, share)
        out[hit] = f[kg[hit]]
        return out, f"{scenario}: {int(hit.sum())} kernels at {share:g} of their roof"
    raise ValueError(f"not an efficiency scenario: {scenario}")
