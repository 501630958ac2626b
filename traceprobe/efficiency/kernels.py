"""Kernel-name rules: which kernels run on tensor (matrix) cores, and a kernel's category
when no op names it. Applied once per distinct kernel name.

Tensor-core kernels, first rule that matches decides (docs/FIGURES.md, "Kernel efficiency"):

1. **Not** tensor cores: ``simt``, ``ffma`` (fp32 fused multiply-add on CUDA cores),
   ``sgemm``/``dgemm`` without ``tensorop``, ``gemv``, ``implicit_convolve_sgemm``,
   ``splitKreduce``; memory-efficient attention for fp32 below sm80 (``fmha_cutlass*_f32`` on
   sm50/sm70).
2. Tensor cores, NVIDIA: ``tensorop``, ``hmma``, ``imma``, ``wmma``, ``gmma``, an MMA shape
   (``16816``, ``1688``, ``884``), ``nvjet`` (cuBLAS's Hopper/Blackwell kernels), a
   reduced-precision dtype in the name (``tf32``, ``bf16``, ``f16``, ``fp16``, ``e4m3``,
   ``e5m2``, ``fp8``, ``i8``), flash attention (``flash_fwd``/``flash_bwd``), memory-efficient
   attention at sm80 or later (fp32 through 3xTF32 tensor-core math).
3. Matrix cores, AMD: Tensile/hipBLASLt kernels with an MFMA instruction field
   (``Cijk_..._MI32x32x8...``), ``mfma``, Composable Kernel ``xdl``.
4. Everything else: not tensor cores.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from traceprobe.efficiency.work import ATTENTION, CONV, ELEMENTWISE, GEMM, NORM, OTHER, REDUCTION

_NOT_TC = re.compile(r"simt|ffma|(?<![a-z])[sd]gemm(?!.*tensorop)|_[sd]gemm|gemv|"
                     r"implicit_convolve_sgemm|splitkreduce|fmha_cutlass[fb]_f32.*sm[57]\d",
                     re.IGNORECASE)
_TC = re.compile(r"tensorop|hmma|imma|wmma|gmma|16816|1688|884gemm|nvjet|tf32|bf16|f16|fp16|"
                 r"e4m3|e5m2|fp8|_i8|flash_fwd|flash_bwd|fmha_cutlass[fb]_f32.*sm(8|9|1\d)\d|"
                 r"cijk_.*_mi\d+x\d+|mfma|xdl", re.IGNORECASE)

_CATEGORY = (
    (re.compile(r"flash|fmha|attention", re.IGNORECASE), ATTENTION),
    (re.compile(r"conv|fprop|dgrad|wgrad", re.IGNORECASE), CONV),
    (re.compile(r"gemm|gemv|cublas|cutlass|nvjet|cijk_|splitkreduce", re.IGNORECASE), GEMM),
    (re.compile(r"norm|softmax", re.IGNORECASE), NORM),
    (re.compile(r"reduce", re.IGNORECASE), REDUCTION),
    (re.compile(r"elementwise|multi_tensor_apply|fill|dropout", re.IGNORECASE), ELEMENTWISE),
)


def tensor_core(name: str) -> bool:
    """Whether a kernel of this name runs on tensor (matrix) cores (the module's rules)."""
    if _NOT_TC.search(name):
        return False
    return bool(_TC.search(name))


def category(name: str) -> str:
    """A kernel's category by its name alone (for kernels no op with a formula names)."""
    for rx, cat in _CATEGORY:
        if rx.search(name):
            return cat
    return OTHER


def per_name(names: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tensor_core bool, category object, name code) per row, each distinct name judged
    once (the codes number the distinct names in order of appearance)."""
    if not len(names):
        return np.zeros(0, bool), np.zeros(0, object), np.zeros(0, np.int64)
    inv, uniq = pd.factorize(names)
    tc = np.array([tensor_core(str(n)) for n in uniq], bool)
    cat = np.array([category(str(n)) for n in uniq], object)
    return tc[inv], cat[inv], inv.astype(np.int64)
