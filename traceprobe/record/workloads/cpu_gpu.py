"""Exercise 3: the CPU computes, and results are copied, while the GPU computes.

Each step computes ``gpu_reps`` matmuls on the GPU, copies each result into a preallocated
pinned host buffer, and computes ``cpu_reps`` matmuls on a CPU tensor.

* ``serial``: GPU matmuls, synchronize, then the CPU matmuls, then the copies (blocking):
  one thing at a time.
* ``overlapped``: the GPU matmuls are issued with their copies on a side stream (as in
  ``copy/side-stream``), and the host computes its matmuls while the GPU computes and
  copies; the runner's synchronize ends the step. Three resources busy at once: GPU
  compute, the copy engine (PCIe) and the CPU.

Buffers are pinned and preallocated so the copies measure the bus, not page faults of
fresh host memory (``copy/blocking`` shows those). On a CPU-only machine the "GPU" part
also runs on the CPU and the variants cannot overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from traceprobe.record.workloads import Context, Prepared, has_streams, run
from traceprobe.record.workloads.copy import compute_and_copy


@dataclass(frozen=True)
class Sizes:
    gpu_n: int
    gpu_reps: int  # GPU matmuls (and copies) per step
    cpu_n: int
    cpu_reps: int  # CPU matmuls per step

    @classmethod
    def full(cls) -> Sizes:
        return cls(gpu_n=4000, gpu_reps=20, cpu_n=1024, cpu_reps=16)

    @classmethod
    def small(cls) -> Sizes:
        return cls(gpu_n=256, gpu_reps=10, cpu_n=128, cpu_reps=10)


def prepare(ctx: Context) -> Prepared:
    cpu, gpu = ctx.plan.devices
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    xg = torch.rand(s.gpu_n, s.gpu_n, device=gpu)
    xc = torch.rand(s.cpu_n, s.cpu_n, device=cpu)
    streams = has_streams(gpu)
    bufs = [torch.empty(s.gpu_n, s.gpu_n, pin_memory=streams) for _ in range(s.gpu_reps)]
    copy_stream = torch.cuda.Stream(gpu) if streams and ctx.variant == "overlapped" else None
    last: list[torch.Tensor] = []

    def serial() -> None:
        ys = run(xg, s.gpu_reps)
        if streams:
            torch.cuda.synchronize(gpu)
        run(xc, s.cpu_reps)
        for buf, y in zip(bufs, ys, strict=True):
            buf.copy_(y)
        last[:] = ys[-1:]

    def overlapped() -> None:
        ys = compute_and_copy(xg, bufs, copy_stream)  # returns once issued (on a GPU)
        run(xc, s.cpu_reps)  # the host computes meanwhile
        last[:] = ys[-1:]

    def check() -> tuple[bool, str]:
        ok = torch.equal(bufs[-1], last[0].cpu())
        return ok, "last host copy equals its GPU result" if ok else "host copy differs"

    notes = [] if streams else ["No GPU: both parts ran on the CPU, one after the other."]
    step = {"serial": serial, "overlapped": overlapped}[ctx.variant]
    return Prepared(step, check=check, notes=notes, facts={"copy_stream": copy_stream is not None})
