"""What the host was doing: its events classified, and the innermost one at each instant.

Shared by the idle attribution (:mod:`.idle`) and the step-time breakdown (:mod:`.steps`).

*Host events* are the trace process's (see :func:`traceprobe.metrics.host.host_process`)
CPU ops, CUDA runtime/driver calls, host-side sync records and ``user_annotation`` ranges
(``record_function``), except the ``ProfilerStep#N`` ranges, which cover everything. Each is
put in one class:

* ``dataloader`` — a range whose name contains ``DataLoader`` (PyTorch's
  ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``);
* ``optimizer`` — a range named ``Optimizer.*`` (``Optimizer.step#SGD.step``);
* ``region`` — any other ``user_annotation`` range (the user's own ``record_function``);
* ``sync`` — a call that waits for the GPU: a runtime/driver call whose name contains
  ``Synchronize``, a host ``cuda_sync`` record, ``aten::_local_scalar_dense`` and
  ``aten::item`` (what ``.item()`` runs);
* ``runtime`` — any other CUDA/HIP runtime or driver call (launches, copies, allocations);
* ``cpu_op`` — any other CPU op.

The first three are *regions*, the rest *leaves*. At an instant the *innermost* event of a
set is the covering one that started last (ties: the one that ends first): on one thread
ranges nest, so that is the deepest; across threads it is the most recent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.metrics.grouping import win_of

REGION_CLASSES = ("dataloader", "optimizer", "region")
LEAF_CLASSES = ("sync", "runtime", "cpu_op")
RUNTIME_KINDS = frozenset({"cuda_runtime", "cuda_driver"})
SYNC_OPS = frozenset({"aten::_local_scalar_dense", "aten::item"})
STEP_PREFIX = "ProfilerStep#"


@dataclass(frozen=True)
class HostEvents:
    """The host events with their class, as arrays (one entry per event)."""

    name: np.ndarray  # object
    cls: np.ndarray  # object: one of REGION_CLASSES + LEAF_CLASSES
    start: np.ndarray  # int64
    end: np.ndarray
    win: np.ndarray | None = None  # int64 window index of each event (a cut frame), else None

    def where(self, classes: tuple[str, ...]) -> np.ndarray:
        return np.isin(self.cls, classes)


def host_events(cpu: pd.DataFrame, pid: int | None) -> HostEvents:
    """Classify the events of process ``pid`` (see the module docstring); empty if None."""
    if pid is None or cpu.empty:
        z = np.empty(0, np.int64)
        return HostEvents(np.empty(0, object), np.empty(0, object), z, z, z)
    mine = cpu["pid"].to_numpy() == pid  # columns at the mask, not a copy of the frame
    kind = cpu["kind"].to_numpy(dtype=object)[mine]
    name = cpu["name"].to_numpy(dtype=object)[mine]
    cls = np.full(len(kind), "", object)
    inverse, names = pd.factorize(name)  # each distinct name once (hashing, not sorting)
    names = names.astype(str)
    is_dl = np.array(["DataLoader" in n for n in names], bool)[inverse]
    is_opt = np.array([n.startswith("Optimizer.") for n in names], bool)[inverse]
    is_step = np.array([n.startswith(STEP_PREFIX) for n in names], bool)[inverse]
    is_sync_name = np.array(["Synchronize" in n for n in names], bool)[inverse]
    is_sync_op = np.array([n in SYNC_OPS for n in names], bool)[inverse]
    ann = kind == "user_annotation"
    rt = pd.Series(kind).isin(list(RUNTIME_KINDS)).to_numpy()
    op = kind == "cpu_op"
    cls[ann & ~is_step] = "region"
    cls[(ann | op) & is_opt & ~is_step] = "optimizer"
    cls[(ann | op) & is_dl & ~is_step] = "dataloader"
    leaf = (rt | op | (kind == "cuda_sync")) & (cls == "")
    cls[leaf & op & ~is_step] = "cpu_op"
    cls[leaf & rt] = "runtime"
    cls[leaf & ((rt & is_sync_name) | (op & is_sync_op) | (kind == "cuda_sync"))] = "sync"
    keep = cls != ""
    return HostEvents(
        name=name[keep],
        cls=cls[keep],
        start=cpu["start"].to_numpy(dtype=np.int64)[mine][keep],
        end=cpu["end"].to_numpy(dtype=np.int64)[mine][keep],
        win=win_of(cpu)[mine][keep],
    )


def innermost(
    bounds: np.ndarray, starts: np.ndarray, ends: np.ndarray, rank: np.ndarray | None = None
) -> np.ndarray:
    """For each elementary segment ``[bounds[i], bounds[i+1])``: the index of the innermost
    event (into ``starts``/``ends``) covering it, or -1.

    ``bounds`` must be sorted and hold every start and end that falls inside its range.
    The innermost event is the covering one of highest ``rank``; by default the rank is the
    order by start, then the longer first, then the index (the one that started last wins,
    ties: the one that ends first, then the later event). ``rank`` lets a caller order by
    other times than those it covers with (unclipped ones) or rank many windows at once.

    No loop over events: each event's run of segments ``[a, b)`` is split into two
    power-of-two blocks that cover it (``[a, a + 2^k)`` and ``[b - 2^k, b)``, ``2^k <= b - a``),
    each block keeps the highest rank put on it, and the blocks are halved level by level
    down to single segments (a sparse table run backwards): one pass over the segments per
    level, ``log2`` of the longest run levels.
    """
    size = max(len(bounds) - 1, 0)
    owner = np.full(size, -1, np.int64)
    if size == 0 or starts.size == 0:
        return owner
    if rank is None:
        rank = np.empty(starts.size, np.int64)
        rank[np.lexsort((-ends, starts))] = np.arange(starts.size)
    a = np.searchsorted(bounds, starts, side="left")
    b = np.minimum(np.searchsorted(bounds, ends, side="left"), size)
    keep = b > a
    if not keep.any():
        return owner
    idx = np.flatnonzero(keep)
    a, b, r = a[idx], b[idx], np.asarray(rank, np.int64)[idx]
    level = np.frexp((b - a).astype(np.float64))[1].astype(np.int64) - 1  # floor(log2(b - a))
    best = np.full(size, -1, np.int64)
    by_level = np.argsort(level, kind="stable")
    cuts = np.searchsorted(level[by_level], np.arange(int(level.max()) + 2))
    for lev in range(int(level.max()), -1, -1):
        sel = by_level[cuts[lev] : cuts[lev + 1]]
        if sel.size:
            width = 1 << lev
            pos = np.concatenate([a[sel], b[sel] - width])
            val = np.concatenate([r[sel], r[sel]])
            np.maximum.at(best, pos, val)
        if lev:
            half = 1 << (lev - 1)
            np.maximum(best[half:], best[:-half].copy(), out=best[half:])
    has = best >= 0
    if has.any():
        back = np.full(int(r.max()) + 1, -1, np.int64)
        back[r] = idx
        owner[has] = back[best[has]]
    return owner
