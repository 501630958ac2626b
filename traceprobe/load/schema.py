"""The shape of loaded data: event categories and the flat columns one trace becomes.

One home for what both :mod:`.columns` (which fills :class:`Columns`) and :mod:`.frames`
(which turns them into the Timeline's frames) need to agree on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from traceprobe.load.read import Document

GPU_CATEGORIES = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "gpu_memset": "memset",
    "Kernel": "kernel",
    "Memcpy": "memcpy",
    "Memset": "memset",  # 2021 names
}
RENAMED_2021 = {"Runtime": "cuda_runtime", "Operator": "cpu_op"}
LEGACY_CATEGORIES = frozenset({"Kernel", "Memcpy", "Memset", "Runtime", "Operator"})
SKIPPED_CATEGORIES = frozenset({"gpu_user_annotation", "Trace"})



@dataclass
class Columns:
    """One trace's complete events as flat arrays, before they become frames.

    ``cpu`` and ``gpu`` map a column name to its array, one entry per CPU or GPU
    row (an empty dict when the trace has no such rows); ``cat`` and ``name``
    hold codes into ``cats`` and ``names``, the raw JSON texts (``input_dims``,
    ``input_types``, ``concrete_inputs``, ``grid``, ``block``) codes into ``texts`` (0: absent);
    ``gpu["kind_arg"]`` is a list (``args.kind``, any JSON value). ``rows`` and
    ``batches`` say which batches of the file the rows came from (see
    :mod:`traceprobe.split`).
    """

    source: str
    cats: list[str]
    names: list[str]
    cpu: dict[str, np.ndarray]
    gpu: dict[str, Any]
    header: Document
    event_count: int
    complete: int = 0
    clamped: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    span: list[int] = field(default_factory=list)  # the profiler's own "Trace" span
    sizes: dict[int, int] = field(default_factory=dict)  # correlation -> args.size (ROCm)
    size_batch: dict[int, int] = field(default_factory=dict)  # correlation -> batch of its size
    rows: list[tuple[int, int, int]] = field(default_factory=list)  # (batch, CPU, GPU rows)
    batches: int = 0  # batches in the whole file (a part of it holds only some)
    salvaged: dict[str, Any] | None = None  # the file was cut short: what was kept (read.py)
    warnings: list[str] = field(default_factory=list)  # what was read leniently, in words
    notes: dict[str, Any] = field(default_factory=dict)  # how it was loaded (meta.extra)
    texts: list[bytes] = field(default_factory=lambda: [b""])  # raw JSON texts by code

    @property
    def legacy(self) -> bool:
        """Whether the trace uses the 2021 category names."""
        return any(c in LEGACY_CATEGORIES for c in self.cats)
