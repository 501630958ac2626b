"""What torch.profiler costs the host, per event, measured: a calibration recording.

    python scripts/gpu/profiler_cost.py OUTDIR [--quick]

traceprobe's ``no-profiler`` scenario removes the profiler's own host cost from a profiled
trace. The trace shows only part of that cost (the bookkeeping *between* events:
``traceprobe/graph/overhead.py``); what the profiler adds *inside* an event (CUPTI's callbacks
inside a runtime call, RecordFunction's shape recording) no interval between events shows. This
script measures the whole cost on the machine it runs on, with micro-loops whose events are
known: each loop body is run

1. **unprofiled**: ``BLOCKS`` blocks of ``ITERS`` iterations, each block between two
   ``torch.cuda.synchronize()`` calls (the kernels are tiny: the host bounds every loop), and
2. **profiled** exactly as ``scripts/gpu/real_loops.py`` profiles (CPU + CUDA activities,
   ``record_shapes=True``, ``schedule(wait=1, warmup=2, active=3)``), one ``ITERS``-iteration
   block per profiler step, each step timed the same way; the trace is written gzipped.

``OUTDIR/profiler-cost/calibration.json`` holds, per loop, the unprofiled and the profiled
ns per iteration (medians over blocks) and the machine (CPU model, cores, GPU, torch). The
events per iteration are counted from the traces afterwards (scripts/profiler_cost_table.py),
so nothing here assumes what a loop records.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 2, 3
ITERS, BLOCKS = 400, 7


def loops(dev: torch.device) -> dict[str, Callable[[], None]]:
    """Loop bodies, each host-bound, each recording a different mix of events."""
    cpu = torch.device("cpu")
    a, b, c = (torch.ones(1, device=dev) for _ in range(3))
    ca, cb, cc = (torch.ones(1, device=cpu) for _ in range(3))
    x, w = torch.ones(2, 4, device=dev), torch.ones(3, 4, device=dev)
    bias = torch.ones(3, device=dev)
    cx, cw, cbias = x.cpu(), w.cpu(), bias.cpu()
    many = [torch.ones(1, device=dev) for _ in range(16)]
    return {
        # one aten op, no runtime call
        "cpu-add": lambda: torch.add(ca, cb, out=cc),
        # a few nested aten ops (linear -> t -> transpose -> as_strided, addmm), no runtime call
        "cpu-linear": lambda: F.linear(cx, cw, cbias),
        # one aten op, one kernel launch
        "cuda-add": lambda: torch.add(a, b, out=c),
        # nested aten ops and a cuBLAS launch
        "cuda-linear": lambda: F.linear(x, w, bias),
        # one aten op with 16 inputs (record_shapes records each), one launch
        "cuda-cat16": lambda: torch.cat(many),
        # a runtime call with no aten op (cudaEventRecord)
        "event-record": lambda: torch.cuda.Event().record(),
    }


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def block(body: Callable[[], None], iters: int, dev: torch.device) -> float:
    """ns per iteration of one block of ``iters`` iterations, synchronized at both ends."""
    sync(dev)
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        body()
    sync(dev)
    return (time.perf_counter_ns() - t0) / iters


def machine() -> dict[str, object]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model or platform.processor(), "cores": os.cpu_count(),
            "usable_cores": len(os.sched_getaffinity(0)),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
            "torch": torch.__version__, "python": platform.python_version()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true", help="few iterations (a CPU smoke test)")
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    iters, blocks = (20, 2) if a.quick else (ITERS, BLOCKS)
    out = Path(a.out) / "profiler-cost"
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, object] = {
        "what": "ns per iteration of host-bound micro-loops, unprofiled and profiled "
                "(CPU + CUDA activities, record_shapes=True): medians over blocks",
        "iters_per_block": iters, "machine": machine(), "loops": {}}
    act = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    for name, body in loops(dev).items():
        if dev.type != "cuda" and name == "event-record":
            continue
        for _ in range(3):  # warm-up: caches, lazy module loading
            block(body, iters, dev)
        plain = [block(body, iters, dev) for _ in range(blocks)]
        folder = out / name
        profiled: list[float] = []
        with profile(activities=act,
                     schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
                     on_trace_ready=tensorboard_trace_handler(str(folder), worker_name="vm",
                                                              use_gzip=True),
                     record_shapes=True) as prof:
            for i in range(WAIT + WARMUP + ACTIVE):
                ns = block(body, iters, dev)
                if i >= WAIT + WARMUP:
                    profiled.append(ns)
                prof.step()
        plain_after = [block(body, iters, dev) for _ in range(blocks)]  # drift check
        result["loops"][name] = {  # type: ignore[index]
            "unprofiled_ns": statistics.median(plain),
            "unprofiled_after_ns": statistics.median(plain_after),
            "profiled_ns": statistics.median(profiled),
            "unprofiled_blocks": plain, "profiled_blocks": profiled,
        }
        print(f"{name}: {statistics.median(plain):.0f} ns unprofiled, "
              f"{statistics.median(profiled):.0f} ns profiled", flush=True)
    (out / "calibration.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
