"""Exercise 2: is 10x10 matmul work launch-bound, and does run() change anything?

Both variants issue the same 50 ``x.mm(x)`` per device, on the CPU and then on the GPU:
``loop`` as a plain for-loop, ``run`` through run(). Both are warmed up (the runner
does a step before timing), which the notes' first measurement was not: their
"0.0518 s vs 0.0005 s" was the first call paying for initialisation.

The notes' loop called ``x.matmul(x)``, which adds an ``aten::matmul`` dispatch layer
over ``aten::mm`` (several microseconds a call on the host): a difference in the op, not
in parallelism. Here both use ``mm`` so that only loop-vs-run differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from traceprobe.record.workloads import Context, MatmulSizes, Prepared, run


@dataclass(frozen=True)
class Sizes(MatmulSizes):
    @classmethod
    def full(cls) -> Sizes:
        return cls(n=10, reps=50)

    @classmethod
    def small(cls) -> Sizes:
        return cls(n=10, reps=50)


def prepare(ctx: Context) -> Prepared:
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    xs = [torch.randn(s.n, s.n, device=d) for d in ctx.plan.devices]

    def loop() -> None:
        for x in xs:
            for _ in range(s.reps):
                _ = x.mm(x)

    def run_all() -> None:
        for x in xs:
            run(x, s.reps)

    if ctx.variant == "cuda-graph":
        return _cuda_graph(xs, s.reps)
    step = {"loop": loop, "run": run_all}[ctx.variant]
    return Prepared(step, facts={"op": "aten::mm", "ops_per_device": s.reps})


def _cuda_graph(xs: list[torch.Tensor], reps: int) -> Prepared:
    """The loop with its GPU part captured once in a CUDA graph (torch.cuda.graphs) and
    replayed each step: the same kernels, one launch. The CPU part stays a plain loop.
    Without a GPU there is nothing to capture: the step runs the plain loop and says so."""
    facts: dict[str, object] = {"op": "aten::mm", "ops_per_device": reps, "cuda_graph": False}
    gpu = [x for x in xs if x.device.type == "cuda"]
    cpu = [x for x in xs if x.device.type != "cuda"]
    if not gpu:
        def plain() -> None:
            for x in xs:
                for _ in range(reps):
                    _ = x.mm(x)

        return Prepared(plain, facts=facts, notes=[
            "CUDA graphs need a GPU: the cuda-graph variant cannot run here and ran the plain "
            "loop instead (verify says it cannot tell)."])
    graphs = []
    for x in gpu:
        side = torch.cuda.Stream(x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        with torch.cuda.stream(side):  # warm up (cuBLAS handles, workspaces) off the capture
            for _ in range(3):
                for _ in range(reps):
                    _ = x.mm(x)
        torch.cuda.current_stream(x.device).wait_stream(side)
        torch.cuda.synchronize(x.device)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                _ = x.mm(x)
        graphs.append(g)
    facts["cuda_graph"] = True

    def step() -> None:
        for x in cpu:
            for _ in range(reps):
                _ = x.mm(x)
        for g in graphs:
            g.replay()

    return Prepared(step, facts=facts)
