"""The device table: each GPU's dense peak rate per dtype and its memory bandwidth, as data.

A trace names its GPUs in ``deviceProperties`` (``name``, and ``numSms``: SMs on NVIDIA,
compute units on ROCm); :func:`roof_of` finds the first entry of :data:`TABLE` whose
pattern matches the name and, when the entry lists a count of SMs, whose count matches too.
ROCm may name an Instinct GPU only "AMD Radeon Graphics": then the compute-unit count
decides (104: one MI250 die, 110: one MI250X die, 228: MI300A, 304: MI300X), and
``computeMajor`` must be 9 (CDNA).
Unknown devices get no roof: the report says so and gives the rates without one.

Figures are the vendors' datasheet peaks for **dense** math (the "with sparsity" figures
halved), in TFLOP/s, and the memory bandwidth in GB/s (10^9 bytes/s):

* V100: NVIDIA Tesla V100 datasheet (SXM2 and PCIe), fp16 is its tensor-core figure.
* A100: NVIDIA A100 Tensor Core GPU datasheet (SXM4 40/80 GB, PCIe 80 GB).
* H100: NVIDIA H100 Tensor Core GPU datasheet (SXM5, PCIe, NVL).
* H200: NVIDIA H200 Tensor Core GPU datasheet (SXM: the H100 SXM's compute, 4.8 TB/s).
* B200: NVIDIA HGX B200 / Blackwell datasheet, per GPU (fp32 is the non-tensor figure).
* MI250X / MI250: AMD Instinct MI250X and MI250 datasheets; ROCm shows each of the two dies
  (GCDs) as a device of its own: the per-die entries are the package's figures halved.
* MI300X / MI300A / MI325X: AMD Instinct MI300X, MI300A and MI325X datasheets.

``fp32`` is the non-tensor (CUDA-core / vector) rate, ``fp32_matrix`` AMD's matrix-core fp32
rate, ``tf32``, ``bf16``, ``fp16``, ``fp8``, ``int8`` the tensor-core (matrix-core) rates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Roof:
    """One device's peaks: ``peaks`` dtype key -> TFLOP/s, ``bandwidth_gbs`` GB/s."""

    name: str  # the table's name for it
    peaks: Mapping[str, float]
    bandwidth_gbs: float
    vendor: str  # "nvidia" | "amd"
    source: str

    def peak(self, key: str) -> float | None:
        return self.peaks.get(key)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "vendor": self.vendor, "peaks_tflops": dict(self.peaks),
                "bandwidth_gbs": self.bandwidth_gbs, "source": self.source}


def _nv(name: str, pattern: str, sms: int | None, fp64: float, fp32: float, tf32: float | None,
        bf16: float | None, fp16: float, fp8: float | None, int8: float | None, bw: float,
        source: str) -> tuple[str, int | None, Roof]:
    peaks = {"fp64": fp64, "fp32": fp32, "tf32": tf32, "bf16": bf16, "fp16": fp16, "fp8": fp8,
             "int8": int8}
    return pattern, sms, Roof(name, {k: v for k, v in peaks.items() if v is not None}, bw,
                              "nvidia", source)


def _amd(name: str, pattern: str, sms: int | None, fp64: float, fp32: float,
         fp32_matrix: float, tf32: float | None, bf16: float, fp8: float | None, int8: float,
         bw: float, source: str) -> tuple[str, int | None, Roof]:
    peaks = {"fp64": fp64, "fp32": fp32, "fp32_matrix": fp32_matrix, "tf32": tf32,
             "bf16": bf16, "fp16": bf16, "fp8": fp8, "int8": int8}
    return pattern, sms, Roof(name, {k: v for k, v in peaks.items() if v is not None}, bw,
                              "amd", source)


# (name pattern, SM/CU count or None for any, roof); first match wins
TABLE: tuple[tuple[str, int | None, Roof], ...] = (
    _nv("V100 SXM2", r"V100.*SXM|V100-SXM", None, 7.8, 15.7, None, None, 125, None, None, 900,
        "NVIDIA Tesla V100 datasheet"),
    _nv("V100 PCIe", r"V100", None, 7.0, 14.0, None, None, 112, None, None, 900,
        "NVIDIA Tesla V100 datasheet"),
    _nv("A100 SXM4 80GB", r"A100.*SXM.*80|A100-SXM4-80", None, 9.7, 19.5, 156, 312, 312, None,
        624, 2039, "NVIDIA A100 datasheet"),
    _nv("A100 PCIe 80GB", r"A100.*PCIe.*80|A100 80GB PCIe", None, 9.7, 19.5, 156, 312, 312,
        None, 624, 1935, "NVIDIA A100 datasheet"),
    _nv("A100 40GB", r"A100", None, 9.7, 19.5, 156, 312, 312, None, 624, 1555,
        "NVIDIA A100 datasheet"),
    _nv("H100 PCIe", r"H100.*PCIe", None, 26, 51, 378, 756, 756, 1513, 1513, 2000,
        "NVIDIA H100 datasheet"),
    _nv("H100 NVL", r"H100 NVL", None, 30, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5, 3900,
        "NVIDIA H100 datasheet"),
    _nv("H100 SXM5", r"H100", None, 34, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 3350,
        "NVIDIA H100 datasheet"),
    _nv("H200 NVL", r"H200 NVL", None, 30, 60, 417.5, 835.5, 835.5, 1670.5, 1670.5, 4800,
        "NVIDIA H200 datasheet"),
    _nv("H200 SXM", r"H200", None, 34, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 4800,
        "NVIDIA H200 datasheet"),
    _nv("B200", r"B200", None, 40, 80, 1100, 2250, 2250, 4500, 4500, 8000,
        "NVIDIA HGX B200 datasheet (per GPU)"),
    _amd("MI250X (one GCD)", r"MI250X|gfx90a|AMD Radeon Graphics", 110, 23.95, 23.95, 47.85,
         None, 191.5, None, 191.5, 1638.4, "AMD Instinct MI250X datasheet, halved per GCD"),
    _amd("MI250 (one GCD)", r"MI250|gfx90a|AMD Radeon Graphics", 104, 22.65, 22.65, 45.25,
         None, 181.05, None, 181.05, 1638.4, "AMD Instinct MI250 datasheet, halved per GCD"),
    _amd("MI250X", r"MI250X", None, 47.9, 47.9, 95.7, None, 383, None, 383, 3276.8,
         "AMD Instinct MI250X datasheet"),
    _amd("MI250", r"MI250", None, 45.3, 45.3, 90.5, None, 362.1, None, 362.1, 3276.8,
         "AMD Instinct MI250 datasheet"),
    _amd("MI300A", r"MI300A", None, 61.3, 122.6, 122.6, 490.3, 980.6, 1961.2, 1961.2, 5300,
         "AMD Instinct MI300A datasheet"),
    _amd("MI325X", r"MI325", None, 81.7, 163.4, 163.4, 653.7, 1307.4, 2614.9, 2614.9, 6000,
         "AMD Instinct MI325X datasheet"),
    _amd("MI300X", r"MI300|gfx942", None, 81.7, 163.4, 163.4, 653.7, 1307.4, 2614.9, 2614.9,
         5300, "AMD Instinct MI300X datasheet"),
    _amd("MI300A", r"AMD Radeon Graphics", 228, 61.3, 122.6, 122.6, 490.3, 980.6, 1961.2,
         1961.2, 5300, "AMD Instinct MI300A datasheet"),
    _amd("MI300X", r"AMD Radeon Graphics", 304, 81.7, 163.4, 163.4, 653.7, 1307.4, 2614.9,
         2614.9, 5300, "AMD Instinct MI300X datasheet"),
)


def _count(props: Mapping[str, Any]) -> int | None:
    for key in ("numSms", "multiProcessorCount", "computeUnits", "numComputeUnits"):
        v = props.get(key)
        if isinstance(v, int | float) and v > 0:
            return int(v)
    return None


def roof_of(props: Mapping[str, Any]) -> Roof | None:
    """The roof of the device these ``deviceProperties`` describe; None when unknown."""
    name = str(props.get("name") or "")
    if not name:
        return None
    sms = _count(props)
    generic = "radeon graphics" in name.lower()
    if generic and props.get("computeMajor") != 9:
        return None  # an integrated or consumer GPU, not an Instinct part
    for pattern, count, roof in TABLE:
        if re.search(pattern, name, re.IGNORECASE) and (count is None or count == sms):
            return roof
    return None


def device_roofs(properties: Sequence[Mapping[str, Any]]) -> dict[int, tuple[str, Roof | None]]:
    """device id -> (its name in the trace, its roof or None)."""
    out: dict[int, tuple[str, Roof | None]] = {}
    for p in properties:
        dev = p.get("id")
        if isinstance(dev, int):
            out[dev] = (str(p.get("name") or ""), roof_of(p))
    return out
