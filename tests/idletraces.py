"""Traces whose GPU idle time has known causes, and plain readers to check them by: shared by
tests/metrics/test_idle.py (the idle partition, metrics/idle.py) and tests/report/test_diagnosis.py
(the report's diagnosis of it).

* :func:`loop_trace` — three steps of a DataLoader-bound loop (TraceBuilder, times in µs);
* :func:`sync_trace` — a tiny timeline (frames, ns) with a stream synchronize in idle time;
* :func:`raw` reads a trace's JSON; :func:`union` and :func:`measure` are interval sums by plain
  loops (|∪a ∩ ∪b|), independent of traceprobe.intervals.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from frames import kernel, op, runtime, timeline
from tracebuild import TraceBuilder

DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def raw(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def union(iv: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def measure(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """|∪a ∩ ∪b| by a plain double loop."""
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in union(a) for s2, e2 in union(b))


def loop_trace(tmp_path: Path) -> Path:
    """Three steps of: DataLoader [0,60) (aten::stack [5,45) with aten::cat [10,40) inside),
    forward region [60,80) launching a kernel that runs [70,90), backward [80,95) launching one
    that runs [92,99), optimizer [95,100) with cudaStreamSynchronize [96,99). Times in µs."""
    t = TraceBuilder(pid=1, tid=1)
    t.device_properties(0)
    for k in range(3):
        o = 100 * k
        t.step(k + 1, o, 100)
        t.cpu("user_annotation", DL, o, 60)
        t.op("aten::stack", o + 5, 40)
        t.op("aten::cat", o + 10, 30)
        t.cpu("user_annotation", "forward", o + 60, 20)
        t.op("aten::conv2d", o + 61, 15)
        t.launch("conv", o + 62, 2, o + 70, 20)
        t.cpu("user_annotation", "backward", o + 80, 15)
        t.launch("conv_bwd", o + 81, 2, o + 92, 7)
        t.cpu("user_annotation", "optimizer", o + 95, 5)
        t.runtime("cudaStreamSynchronize", o + 96, 3)
    return t.write(tmp_path / "loop.json")


def sync_trace():
    # GPU 0 runs [0,10) and [50,60). The host (pid 100):
    #   aten::mm [-5,-1) containing cudaLaunchKernel [-5,-3)
    #   aten::item [20,45) containing cudaStreamSynchronize [22,40)
    # Another process (pid 999) has an op [10,50): not the trace's process, ignored.
    # A GPU-side cuda_sync record (pid 0, the device's track) is not host time either.
    return timeline(
        gpu=[kernel(0, 10), kernel(50, 60)],
        cpu=[
            op(-5, -1, "aten::mm"),
            runtime(-5, -3, "cudaLaunchKernel"),
            op(20, 45, "aten::item"),
            runtime(22, 40, "cudaStreamSynchronize"),
            op(10, 50, "other_process_op", pid=999),
            {"kind": "cuda_sync", "name": "Stream Sync", "start": 22, "end": 40, "pid": 0},
        ],
    )
