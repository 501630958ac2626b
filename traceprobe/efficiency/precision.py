"""The precision finding and the what-if rescalings (``precision:tf32|bf16``, ``roof:REGEX=S``).

A target precision rescales the rows it applies to, **keeping each row's achieved share of
its roof**: a row of roof time ``t_roof`` (:mod:`.roofline`) measured at ``t`` runs at share
``s = t_roof / t``; at the new precision its roof time is ``t_roof'`` and its time
``t' = t_roof' / s = t x t_roof' / t_roof``. Every kernel of the row is scaled by that factor.

* ``tf32``: fp32 GEMM and convolution rows off tensor cores; the peak becomes the TF32 one
  (AMD: matrix-core fp32); bytes unchanged.
* ``bf16`` (``torch.autocast``): fp32 GEMM, convolution and attention rows, on tensor cores
  (TF32, 3xTF32) or not (autocast casts their inputs whatever the fp32 math mode); the peak
  becomes bf16's and the bytes halve.
* ``roof:REGEX=S``: the kernels whose name matches run at share S of their row's roof:
  ``t' = t_roof / S`` for their share of the row's time.

Rows whose work is unknown (no recorded shapes) are left as measured, and counted in the note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.efficiency.devices import Roof
from traceprobe.efficiency.work import ATTENTION, CONV, GEMM

TARGETS = {"tf32": (GEMM, CONV), "bf16": (GEMM, CONV, ATTENTION)}
MATERIAL = 0.10  # the finding is a headline when the TF32 saving is >= 10% of kernel time


@dataclass(frozen=True)
class Rescale:
    """Per row the factor on its kernels' time (1: unchanged), and what was left out."""

    factor: np.ndarray
    matched: int  # rows rescaled
    unknown: int  # matching rows without known work


def _target_key(target: str, roof: Roof) -> str:
    if target == "tf32":
        return "tf32" if roof.vendor == "nvidia" else "fp32_matrix"
    return target


def precision(rows: pd.DataFrame, roof: Roof | None, target: str) -> Rescale:
    """The factors of ``precision:target`` on ``rows`` (:func:`~.roofline.with_roof`)."""
    factor = np.ones(len(rows))
    if roof is None or _target_key(target, roof) not in roof.peaks:
        return Rescale(factor, 0, 0)
    tc = rows["tensor_core"].to_numpy(bool)
    hit = (rows["category"].isin(TARGETS[target]).to_numpy()
           & (rows["dtype"].to_numpy() == "fp32") & (rows["time_ns"].to_numpy() > 0)
           & (~tc if target == "tf32" else True))
    known = hit & rows["roof_ns"].notna().to_numpy() & (rows["roof_ns"].to_numpy() > 0)
    peak = roof.peaks[_target_key(target, roof)] * 1e12
    f = rows["flops"].to_numpy(float)
    b = rows["bytes"].to_numpy(float) * (0.5 if target == "bf16" else 1.0)
    new = np.fmax(f / peak, b / (roof.bandwidth_gbs * 1e9)) * 1e9
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = new / rows["roof_ns"].to_numpy(float)
    factor[known] = np.minimum(ratio[known], 1.0)
    return Rescale(factor, int(known.sum()), int((hit & ~known).sum()))


def at_roof_share(rows: pd.DataFrame, share: float) -> np.ndarray:
    """Per row the factor that puts it at ``share`` of its roof (1 where the work is unknown;
    never slower than measured)."""
    t = rows["time_ns"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = rows["roof_ns"].to_numpy(float) / share / t
    return np.where(np.isfinite(f) & (f > 0), np.minimum(f, 1.0), 1.0)


def matching(names: np.ndarray, rx: re.Pattern[str]) -> np.ndarray:
    inv, uniq = pd.factorize(names)
    return np.array([bool(rx.search(str(n))) for n in uniq], bool)[inv] if len(uniq) else \
        np.zeros(len(names), bool)


@dataclass(frozen=True)
class Finding:
    """fp32 matrix work off tensor cores on a device that has them."""

    fp32_ns: float  # kernel time of the fp32 GEMM/convolution rows off tensor cores
    fp32_tflops: float | None  # their achieved rate (rows of known work)
    gemm_ns: float  # of fp32_ns, GEMMs (the rest: convolutions)
    kernel_ns: float  # all kernel time
    tf32_saving_ns: float
    bf16_saving_ns: float
    material: bool
    steps: int = 0  # ProfilerSteps in the window (0: none), for the per-step figures

    def per_step(self, ns: float) -> float | None:
        return ns / self.steps / 1e3 if self.steps else None

    def to_dict(self) -> dict[str, float | bool | None]:
        return {"fp32_off_tensor_cores_us": self.fp32_ns / 1e3,
                "fp32_tflops": self.fp32_tflops, "gemm_us": self.gemm_ns / 1e3,
                "kernel_us": self.kernel_ns / 1e3,
                "tf32_saving_us": self.tf32_saving_ns / 1e3,
                "bf16_saving_us": self.bf16_saving_ns / 1e3, "material": self.material,
                "steps": self.steps, "kernel_per_step_us": self.per_step(self.kernel_ns),
                "tf32_kernel_per_step_us": self.per_step(self.kernel_ns - self.tf32_saving_ns),
                "bf16_kernel_per_step_us": self.per_step(self.kernel_ns - self.bf16_saving_ns)}


def finding(rows: pd.DataFrame, roof: Roof | None, steps: int = 0) -> Finding | None:
    """The precision finding, or None when there is no fp32 matrix work off tensor cores on
    a device with TF32 (or matrix-core fp32)."""
    if roof is None or _target_key("tf32", roof) not in roof.peaks or rows.empty:
        return None
    t = rows["time_ns"].to_numpy(float)
    off = (rows["category"].isin(TARGETS["tf32"]).to_numpy()
           & (rows["dtype"].to_numpy() == "fp32") & ~rows["tensor_core"].to_numpy(bool))
    fp32_ns = float(t[off].sum())
    if fp32_ns <= 0:
        return None
    tf = precision(rows, roof, "tf32")
    bf = precision(rows, roof, "bf16")
    total = float(t.sum())
    tf_save = float((t * (1 - tf.factor)).sum())
    bf_save = float((t * (1 - bf.factor)).sum())
    f = rows["flops"].to_numpy(float)
    known = off & ~np.isnan(f)
    kt = float(t[known].sum())
    rate = float(f[known].sum()) / kt * 1e9 / 1e12 if kt > 0 else None
    gemm_ns = float(t[off & (rows["category"].to_numpy() == GEMM)].sum())
    material = total > 0 and tf_save / total >= MATERIAL
    return Finding(fp32_ns, rate, gemm_ns, total, tf_save, bf_save, material, steps)
