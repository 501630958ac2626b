"""Which kernels fill the GPU: grid size against what the SMs can hold at once.

A kernel *fills* its device when its grid has at least as many blocks as the device
can keep resident: ``numSms x resident blocks per SM``, where resident blocks per SM
is the least of the limits a block's threads, registers and shared memory put on one
SM (CUDA's occupancy rule, without allocation granularity)::

    by threads   maxThreadsPerMultiprocessor // block threads
    by registers regsPerMultiprocessor // (registers_per_thread * block threads)
    by shared    sharedMemPerMultiprocessor // shared_memory       (when > 0)
    at most      MAX_BLOCKS_PER_SM (32, sm_50 and later)

The replay does not run two filling kernels of one device at the same time. A kernel
whose args or whose device's ``deviceProperties`` are missing is *not* treated as
filling (nothing is known that would serialise it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

MAX_BLOCKS_PER_SM = 32


def resident_blocks(
    block_threads: np.ndarray, regs: np.ndarray, smem: np.ndarray, props: dict[str, Any]
) -> np.ndarray:
    """Blocks of each kernel one SM can hold at once (0 where unknown)."""
    n = len(block_threads)
    out = np.zeros(n, np.int64)
    threads_sm = int(props.get("maxThreadsPerMultiprocessor") or 0)
    regs_sm = int(props.get("regsPerMultiprocessor") or 0)
    smem_sm = int(props.get("sharedMemPerMultiprocessor") or 0)
    ok = (block_threads > 0) & (threads_sm > 0)
    if not ok.any():
        return out
    bt = np.where(ok, block_threads, 1)
    lim = np.where(ok, threads_sm // bt, 0)
    lim = np.minimum(lim, MAX_BLOCKS_PER_SM)
    if regs_sm > 0:
        per_block = np.where(regs > 0, regs * bt, 0)
        by_regs = np.where(per_block > 0, regs_sm // np.maximum(per_block, 1), MAX_BLOCKS_PER_SM)
        lim = np.minimum(lim, by_regs)
    if smem_sm > 0:
        by_smem = np.where(smem > 0, smem_sm // np.maximum(smem, 1), MAX_BLOCKS_PER_SM)
        lim = np.minimum(lim, by_smem)
    out[ok] = np.maximum(lim[ok], 1)  # a launchable kernel fits at least one block
    return out


def volume(texts: pd.Series) -> np.ndarray:
    """``"[x,y,z]"`` (the frames' ``grid``/``block`` text) -> x*y*z; -1 where unknown or
    malformed. Each distinct text is parsed once."""
    codes, uniq = pd.factorize(texts.to_numpy(object))
    vol = np.full(len(uniq) + 1, -1, np.int64)
    for i, t in enumerate(uniq):
        try:
            dims = json.loads(t) if t else None
        except ValueError:
            dims = None
        if isinstance(dims, list) and dims and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims
        ):
            vol[i] = int(np.prod(dims))
    return vol[codes]  # code -1 (missing) reads the trailing -1


def fills_gpu(gpu: pd.DataFrame, device_properties: Sequence[dict[str, Any]]) -> np.ndarray:
    """One bool per row of ``gpu``: a kernel whose grid is at least the device's resident
    capacity."""
    n = len(gpu)
    out = np.zeros(n, bool)
    if n == 0 or "grid" not in gpu.columns or "block" not in gpu.columns:
        return out
    kernel = (gpu["kind"] == "kernel").to_numpy()
    grid = volume(gpu["grid"])
    block = volume(gpu["block"])
    unknown = np.full(n, -1, np.int64)
    regs = gpu["registers_per_thread"].to_numpy() if "registers_per_thread" in gpu else unknown
    smem = gpu["shared_memory"].to_numpy() if "shared_memory" in gpu else unknown
    dev = gpu["device"].to_numpy()
    for props in device_properties:
        sms = int(props.get("numSms") or 0)
        if sms <= 0 or props.get("id") is None:
            continue
        rows = np.flatnonzero(kernel & (dev == int(props["id"])) & (grid > 0))
        if not len(rows):
            continue
        res = resident_blocks(block[rows], regs[rows], smem[rows], props)
        out[rows] = (res > 0) & (grid[rows] >= sms * res)
    return out
