"""The figures a verdict reports: those only the timeline gives, and each figure's unit.

    extra = timeline_figures(tl)       # -> dict: concurrent kernels, host compute, ...
    units(verdicts)                    # -> {"span_us": "us", "utilization": "fraction", ...}

:func:`timeline_figures` computes, with the interval algebra of :mod:`traceprobe.intervals`,
the few figures a rule needs that the report dict lacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from traceprobe.intervals import coverage, max_depth, measure_within, overlap, spans
from traceprobe.metrics.host import RUNTIME_KINDS, host_process
from traceprobe.timeline import Timeline

FRACTIONS = frozenset({
    "cross_device_overlap", "cross_device_overlap_of_min", "sequential_cross_device_overlap",
    "parallel_cross_device_overlap", "hidden_copy_fraction", "hidden_comm_fraction",
    "utilization", "host_overlap_fraction", "cross_rank_overlap",
    "cross_device_overlap_per_step",
})

Figures = dict[str, Any]


def timeline_figures(tl: Timeline) -> Figures:
    """Figures the report lacks, from the timeline itself (interval algebra only).

    * ``max_concurrent_kernels``: most kernels of one device running at one instant;
      ``concurrent_kernels_us``: time with two or more of them (summed over devices).
    * ``copies_on_compute_stream``: copies issued on a stream that also ran kernels.
    * ``host_compute_us``: CPU ops on the host's main thread that contain no CUDA
      runtime/driver/sync call (host computation, not GPU driving), as a union;
      ``host_gpu_overlap_us``: the part of it inside the union of GPU busy time (kernels,
      copies, memsets of every device); ``host_kernel_overlap_us``: inside kernels only.
    """
    out: Figures = {"max_concurrent_kernels": 0, "concurrent_kernels_us": 0.0}
    k = tl.kernels
    for _, rows in k.groupby("device"):
        s, e = rows["start"].to_numpy(), rows["end"].to_numpy()
        out["max_concurrent_kernels"] = max(out["max_concurrent_kernels"], max_depth(s, e))
        out["concurrent_kernels_us"] += coverage(s, e, 2).length / 1000.0
    copies = tl.copies
    if not copies.empty:
        on = copies.set_index(["device", "stream"]).index.isin(
            k.set_index(["device", "stream"]).index)
        out["copies_on_compute_stream"] = int(np.count_nonzero(on))
    cpu = tl.cpu
    pid = host_process(cpu)
    mine = cpu[cpu["pid"] == pid] if pid is not None else cpu.iloc[0:0]
    ops = mine[mine["kind"] == "cpu_op"]
    if ops.empty:
        out.update(host_compute_us=0.0, host_gpu_overlap_us=0.0, host_kernel_overlap_us=0.0)
        return out
    counts = ops["tid"].value_counts()
    main = int(counts[counts == counts.max()].index.min())
    ops = ops[ops["tid"] == main]
    rt = mine[mine["kind"].isin(RUNTIME_KINDS) & (mine["tid"] == main)]
    driving = measure_within(spans(rt["start"], rt["end"]), ops["start"], ops["end"]) > 0
    compute = spans(ops["start"].to_numpy()[~driving], ops["end"].to_numpy()[~driving])
    busy = spans(tl.gpu["start"], tl.gpu["end"])
    out["host_compute_us"] = compute.length / 1000.0
    out["host_gpu_overlap_us"] = overlap(compute, busy) / 1000.0
    out["host_kernel_overlap_us"] = overlap(compute, spans(k["start"], k["end"])) / 1000.0
    return out


def units(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each figure name's unit: us | fraction | ratio | count | bool | text."""
    out: dict[str, str] = {}
    for v in verdicts:
        for name, value in (v.get("figures") or {}).items():
            if name.endswith("_us"):
                out[name] = "us"
            elif name in FRACTIONS:
                out[name] = "fraction"
            elif name.startswith("speedup") or name.endswith("_ratio"):
                out[name] = "ratio"
            elif isinstance(value, bool):
                out[name] = "bool"
            elif isinstance(value, str):
                out[name] = "text"
            else:
                out.setdefault(name, "count")
    return dict(sorted(out.items()))
