"""Achieved rates against the device's roof, per row of work and per category.

For a row with FLOPs ``F``, bytes ``B`` and summed kernel time ``t`` on a device of peak
``P`` (TFLOP/s, of the dtype the row's kernels ran at) and bandwidth ``W`` (GB/s):

    achieved TFLOP/s = F / t           achieved GB/s = B / t       intensity = F / B
    roof time  t_roof = max(F / P, B / W)                          roof fraction = t_roof / t
    bound = "compute" when F / P >= B / W, else "memory"

(the roof fraction equals achieved / min(P, intensity x W), the classic roofline). The peak
key: a GEMM, convolution or attention row with a kernel on tensor cores uses its
dtype's tensor-core peak (fp32 there means TF32 on NVIDIA, the matrix-core fp32 on AMD);
every other row the non-tensor fp32 (fp64 for fp64) peak.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceprobe.efficiency.devices import Roof
from traceprobe.efficiency.work import MATRIX

NON_TC = {"fp64": "fp64"}  # any other dtype runs at the fp32 vector rate off tensor cores


def peak_key(category: str, dtype: str, tc: bool, roof: Roof) -> str:
    if category in MATRIX and tc:
        if dtype == "fp32":
            return "tf32" if roof.vendor == "nvidia" else "fp32_matrix"
        if dtype in roof.peaks:
            return dtype
    return NON_TC.get(dtype, "fp32")


def with_roof(groups: pd.DataFrame, roof: Roof | None) -> pd.DataFrame:
    """``groups`` plus the rate columns (NaN where a figure is unknown)."""
    g = groups.copy()
    t = g["time_ns"].to_numpy(float) / 1e9
    f, b = g["flops"].to_numpy(float), g["bytes"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        g["tflops"] = np.where(t > 0, f / t / 1e12, np.nan)
        g["gbs"] = np.where(t > 0, b / t / 1e9, np.nan)
        g["intensity"] = np.where(b > 0, f / b, np.nan)
    # any kernel on tensor cores: an op's other kernels are helpers (layout transforms,
    # split-K reductions) that do none of its math
    tc = g["tc_ns"].to_numpy(float) > 0
    g["tensor_core"] = tc
    if roof is None:
        g["peak_key"] = ""
        g["peak_tflops"] = np.nan
        g["roof_ns"] = np.nan
        g["roof_fraction"] = np.nan
        g["bound"] = ""
        return g
    keys = [peak_key(c, d, bool(x), roof) for c, d, x in zip(
        g["category"].tolist(), g["dtype"].tolist(), tc.tolist(), strict=True)]
    peak = np.array([roof.peaks.get(k, np.nan) for k in keys], float)
    g["peak_key"] = keys
    g["peak_tflops"] = peak
    t_compute = f / (peak * 1e12)
    t_memory = b / (roof.bandwidth_gbs * 1e9)
    roof_s = np.fmax(t_compute, t_memory)
    g["roof_ns"] = roof_s * 1e9
    with np.errstate(divide="ignore", invalid="ignore"):
        g["roof_fraction"] = np.where(t > 0, roof_s / t, np.nan)
    g["bound"] = np.where(np.isnan(roof_s), "", np.where(
        np.nan_to_num(t_compute, nan=-1) >= np.nan_to_num(t_memory, nan=-1), "compute",
        "memory"))
    return g


def by_category(rows: pd.DataFrame) -> pd.DataFrame:
    """Per category: kernel time, FLOPs and bytes of the rows whose work is known, rates over
    those rows' time, and the roof fraction (their summed roof time / their summed time)."""
    r = rows[rows["time_ns"].to_numpy() > 0]
    codes, cats = pd.factorize(r["category"].to_numpy(object))
    nc = len(cats)

    def total(values: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
        v = np.nan_to_num(values.astype(float)) if where is None else np.where(
            where, np.nan_to_num(values.astype(float)), 0.0)
        return np.bincount(codes, weights=v, minlength=nc)

    known = (r["flops"].notna() & r["bytes"].notna()).to_numpy()
    t = r["time_ns"].to_numpy(float)
    out = pd.DataFrame({
        "category": np.asarray(cats, object), "time_ns": total(t),
        "kernels": total(r["kernels"].to_numpy()).astype(np.int64), "tc_ns": total(
            r["tc_ns"].to_numpy()), "known_ns": total(t, known),
        "flops": total(r["flops"].to_numpy(), known), "bytes": total(r["bytes"].to_numpy(),
                                                                     known),
        "roof_ns": total(r["roof_ns"].to_numpy(), known & r["roof_ns"].notna().to_numpy()),
    })
    kt = out["known_ns"].to_numpy(float) / 1e9
    no_roof = total(known & r["roof_ns"].isna().to_numpy()) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        out["tflops"] = np.where(kt > 0, out["flops"] / kt / 1e12, np.nan)
        out["gbs"] = np.where(kt > 0, out["bytes"] / kt / 1e9, np.nan)
        out["roof_fraction"] = np.where((kt > 0) & ~no_roof,
                                        out["roof_ns"].to_numpy(float) / 1e9 / kt, np.nan)
    return out.sort_values("time_ns", ascending=False, kind="stable").reset_index(drop=True)
